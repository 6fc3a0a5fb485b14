package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidCursor is returned for any cursor that does not decode to a
// well-formed anchor. Cursors are validated, never trusted.
var ErrInvalidCursor = errors.New("invalid cursor")

const maxCursorLen = 512

// EncodeCursor renders any anchor as base64url JSON.
func EncodeCursor(anchor any) string {
	b, _ := json.Marshal(anchor)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses a base64url JSON cursor strictly into dst.
func DecodeCursor(s string, dst any) error {
	if s == "" || len(s) > maxCursorLen {
		return ErrInvalidCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return ErrInvalidCursor
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil || dec.More() {
		return ErrInvalidCursor
	}
	return nil
}

// JobCursor anchors the jobs list (created_at DESC, id DESC), protocol §6.1.
type JobCursor struct {
	CreatedAt string `json:"created_at"`
	ID        int64  `json:"id"`
}

// DecodeJobCursor validates the anchor's fields as well as its encoding.
func DecodeJobCursor(s string) (JobCursor, error) {
	var c JobCursor
	if err := DecodeCursor(s, &c); err != nil {
		return c, err
	}
	if c.ID <= 0 {
		return c, ErrInvalidCursor
	}
	// The anchor is compared as text in SQL, so only the canonical
	// spelling is accepted: ParseTime alone lets "05.+70" through.
	if t, err := ParseTime(c.CreatedAt); err != nil || FormatTime(t) != c.CreatedAt {
		return c, ErrInvalidCursor
	}
	return c, nil
}

// DuplicateGroupCursor anchors the duplicate groups list, protocol §6.2.
type DuplicateGroupCursor struct {
	FileCount      int64  `json:"file_count"`
	TotalSizeBytes int64  `json:"total_size_bytes"`
	HashAlgorithm  string `json:"hash_algorithm"`
	ContentHashHex string `json:"content_hash_hex"`
}

func DecodeDuplicateGroupCursor(s string) (DuplicateGroupCursor, error) {
	var c DuplicateGroupCursor
	if err := DecodeCursor(s, &c); err != nil {
		return c, err
	}
	if c.FileCount < 2 || c.TotalSizeBytes < 0 {
		return c, ErrInvalidCursor
	}
	if _, err := ParseGroupKey(c.HashAlgorithm + ":" + c.ContentHashHex); err != nil {
		return c, ErrInvalidCursor
	}
	return c, nil
}

// SortCursor anchors a page of a list in natural order: the last row's
// sort key and id (the tie-break).
type SortCursor struct {
	// Scope is the group the key orders within, for lists that order by
	// group first (the library of GET /files); 0 when there is none.
	Scope int64  `json:"s,omitempty"`
	Key   string `json:"k"`
	ID    int64  `json:"id"`
}

// DecodeSortCursor parses a natural-order cursor.
func DecodeSortCursor(s string) (SortCursor, error) {
	var c SortCursor
	if err := DecodeCursor(s, &c); err != nil {
		return c, err
	}
	if c.ID <= 0 {
		return c, ErrInvalidCursor
	}
	return c, nil
}

// IDCursor is the cursor of id-ordered lists: the last id as a decimal string
// (protocol §6.3), wrapped in base64url so that it stays opaque.
func EncodeIDCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func DecodeIDCursor(s string) (int64, error) {
	if s == "" || len(s) > 32 {
		return 0, ErrInvalidCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, ErrInvalidCursor
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != string(raw) {
		return 0, ErrInvalidCursor
	}
	return id, nil
}

// GroupKey identifies a duplicate group: "<algorithm>:<hex digest>".
type GroupKey struct {
	Algorithm HashAlgorithm
	Hash      []byte
}

func (k GroupKey) String() string { return string(k.Algorithm) + ":" + hex.EncodeToString(k.Hash) }

// ParseGroupKey accepts only a known algorithm and a lowercase hex digest of
// that algorithm's exact length.
func ParseGroupKey(s string) (GroupKey, error) {
	alg, hx, ok := strings.Cut(s, ":")
	if !ok {
		return GroupKey{}, fmt.Errorf("group key %q: want <algorithm>:<hex>", s)
	}
	a, err := ParseHashAlgorithm(alg)
	if err != nil {
		return GroupKey{}, fmt.Errorf("group key: %w", err)
	}
	if len(hx) != a.HexLen() || strings.ToLower(hx) != hx {
		return GroupKey{}, fmt.Errorf("group key: want %d lowercase hex characters", a.HexLen())
	}
	h, err := hex.DecodeString(hx)
	if err != nil {
		return GroupKey{}, fmt.Errorf("group key: %w", err)
	}
	return GroupKey{Algorithm: a, Hash: h}, nil
}
