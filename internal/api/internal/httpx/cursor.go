package httpx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// Cursors (PROTOCOL.md §6) are opaque to clients: base64url JSON of the
// last row's anchor (model.JobAnchor, …), or of its id. The API makes them
// and checks them strictly on the way back; the store takes the decoded
// anchors.

// errInvalidCursor is returned for any cursor that does not decode to a
// well-formed anchor. Cursors are validated, never trusted.
var errInvalidCursor = errors.New("invalid cursor")

const maxCursorLen = 512

// EncodeCursor renders any anchor as base64url JSON.
func EncodeCursor(anchor any) string {
	b, _ := json.Marshal(anchor)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses a base64url JSON cursor strictly into dst.
func DecodeCursor(s string, dst any) error {
	if s == "" || len(s) > maxCursorLen {
		return errInvalidCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return errInvalidCursor
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil || dec.More() {
		return errInvalidCursor
	}
	return nil
}

// DecodeJobCursor validates the anchor's fields as well as its encoding.
func DecodeJobCursor(s string) (model.JobAnchor, error) {
	var c model.JobAnchor
	if err := DecodeCursor(s, &c); err != nil {
		return c, err
	}
	if c.ID <= 0 {
		return c, errInvalidCursor
	}
	// The anchor is compared as text in SQL, so only the canonical
	// spelling is accepted: ParseTime alone lets "05.+70" through.
	if t, err := protocol.ParseTime(c.CreatedAt); err != nil || protocol.FormatTime(t) != c.CreatedAt {
		return c, errInvalidCursor
	}
	return c, nil
}

// DecodeGroupCursor parses a duplicate groups cursor.
func DecodeGroupCursor(s string) (model.GroupAnchor, error) {
	var c model.GroupAnchor
	if err := DecodeCursor(s, &c); err != nil {
		return c, err
	}
	if c.FileCount < 2 || c.TotalSizeBytes < 0 {
		return c, errInvalidCursor
	}
	if _, err := protocol.ParseGroupKey(c.HashAlgorithm + ":" + c.ContentHashHex); err != nil {
		return c, errInvalidCursor
	}
	return c, nil
}

// DecodeSortCursor parses a natural-order cursor.
func DecodeSortCursor(s string) (model.SortAnchor, error) {
	var c model.SortAnchor
	if err := DecodeCursor(s, &c); err != nil {
		return c, err
	}
	if c.ID <= 0 {
		return c, errInvalidCursor
	}
	return c, nil
}

// DecodeSearchCursor parses a ranked book search cursor: rank 0 or 1, id > 0.
func DecodeSearchCursor(s string) (model.SearchAnchor, error) {
	var c model.SearchAnchor
	if err := DecodeCursor(s, &c); err != nil {
		return c, err
	}
	if c.ID <= 0 || (c.Rank != 0 && c.Rank != 1) {
		return c, errInvalidCursor
	}
	return c, nil
}

// EncodeIDCursor is the cursor of id-ordered lists: the last id as a decimal string
// (protocol §6.3), wrapped in base64url so that it stays opaque.
func EncodeIDCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

// DecodeIDCursor parses an id cursor.
func DecodeIDCursor(s string) (int64, error) {
	if s == "" || len(s) > 32 {
		return 0, errInvalidCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, errInvalidCursor
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != string(raw) {
		return 0, errInvalidCursor
	}
	return id, nil
}
