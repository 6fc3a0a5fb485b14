package protocol

import (
	"encoding/hex"
	"fmt"
	"strings"
)

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
