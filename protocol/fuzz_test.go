package protocol

import (
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// FuzzParseGroupKey: group keys arrive verbatim in
// /duplicates/groups/:key/files. No panic, bounded time, and an accepted
// key is canonical. Run it with
//
//	go test ./protocol -run '^$' -fuzz '^FuzzParseGroupKey$' -fuzztime 5m
//
// Seeds are the f.Add calls plus the committed corpus under
// testdata/fuzz/FuzzParseGroupKey/.
func FuzzParseGroupKey(f *testing.F) {
	hash := strings.Repeat("0f", 32)
	for _, s := range []string{"blake3:" + hash, "sha256:" + hash, "BLAKE3:" + hash, "blake3:" + strings.ToUpper(hash),
		"blake3:" + hash[2:], "blake3:" + hash + "00", "blake3:" + hash[:62] + "zz", "blake3", ":", "", "sha256::" + hash,
		"blake3:" + hash + "\x00", "../../etc/passwd", "blake3:%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var k GroupKey
		var err error
		testutil.Timed(t, "ParseGroupKey", func() { k, err = ParseGroupKey(s) })
		if err != nil {
			if k.Algorithm != "" || k.Hash != nil {
				t.Fatalf("rejected %q but returned %+v", s, k)
			}
			return
		}
		if len(k.Hash) != 32 {
			t.Fatalf("accepted %q with a %d-byte hash", s, len(k.Hash))
		}
		// Exactly one spelling per group: the key must be canonical.
		if k.String() != s {
			t.Fatalf("accepted %q, canonical form %q", s, k.String())
		}
	})
}
