package httpx

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// Fuzz targets for the cursor decoders, which take ?cursor= verbatim. Run
// one at a time:
//
//	go test ./internal/api -run '^$' -fuzz '^FuzzDecodeJobCursor$' -fuzztime 5m
//
// Seeds are the f.Add calls plus the committed corpus under
// testdata/fuzz/<Target>/. The property of every target: no panic, bounded
// time, a rejection is exactly errInvalidCursor, and an accepted value is
// well-formed and survives an encode/decode round trip.

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func FuzzDecodeJobCursor(f *testing.F) {
	f.Add(EncodeCursor(model.JobAnchor{CreatedAt: "2026-01-02 03:04:05.678", ID: 42}))
	f.Add(b64(`{"created_at":"2026-01-02 03:04:05.678","id":1}`))
	f.Add(b64(`{"created_at":"2026-01-02 03:04:05.678","id":0}`))
	f.Add(b64(`{"created_at":"2026-01-02T03:04:05Z","id":7}`))
	f.Add(b64(`{"created_at":"2026-01-02 03:04:05.678","id":1,"x":1}`))
	f.Add(b64(`{"created_at":"2026-01-02 03:04:05.678","id":1}{}`))
	f.Add(b64(`{"id":9223372036854775807,"created_at":"9999-12-31 23:59:59.999"}`))
	f.Add(b64(`[]`))
	f.Add("")
	f.Add("====")
	f.Add(strings.Repeat("A", 600))
	f.Fuzz(func(t *testing.T, s string) {
		var c model.JobAnchor
		var err error
		testutil.Timed(t, "decodeJobCursor", func() { c, err = DecodeJobCursor(s) })
		if err != nil {
			if !errors.Is(err, errInvalidCursor) {
				t.Fatalf("error %v is not errInvalidCursor", err)
			}
			return
		}
		if c.ID <= 0 {
			t.Fatalf("accepted id %d", c.ID)
		}
		at, perr := protocol.ParseTime(c.CreatedAt)
		if perr != nil {
			t.Fatalf("accepted created_at %q: %v", c.CreatedAt, perr)
		}
		if len(s) > maxCursorLen {
			t.Fatalf("accepted a %d-byte cursor", len(s))
		}
		again, err := DecodeJobCursor(EncodeCursor(c))
		if err != nil || again != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, again, err)
		}
		// The anchor is compared as text in SQL: it must be a canonical
		// protocol timestamp, or a page could skip or repeat rows.
		if protocol.FormatTime(at) != c.CreatedAt {
			t.Fatalf("created_at %q is not canonical (%q)", c.CreatedAt, protocol.FormatTime(at))
		}
	})
}

func FuzzDecodeDuplicateGroupCursor(f *testing.F) {
	hash := strings.Repeat("ab", 32)
	f.Add(EncodeCursor(model.GroupAnchor{FileCount: 2, TotalSizeBytes: 10, HashAlgorithm: "blake3", ContentHashHex: hash}))
	f.Add(EncodeCursor(model.GroupAnchor{FileCount: 1, TotalSizeBytes: 10, HashAlgorithm: "blake3", ContentHashHex: hash}))
	f.Add(EncodeCursor(model.GroupAnchor{FileCount: 3, TotalSizeBytes: -1, HashAlgorithm: "sha256", ContentHashHex: hash}))
	f.Add(EncodeCursor(model.GroupAnchor{FileCount: 3, TotalSizeBytes: 1, HashAlgorithm: "md5", ContentHashHex: hash}))
	f.Add(EncodeCursor(model.GroupAnchor{FileCount: 3, TotalSizeBytes: 1, HashAlgorithm: "sha256", ContentHashHex: strings.ToUpper(hash)}))
	f.Add(b64(`{"file_count":2,"total_size_bytes":1,"hash_algorithm":"blake3:","content_hash_hex":"` + hash[1:] + `"}`))
	f.Add(b64(`{"file_count":"2"}`))
	f.Add("%2e%2e")
	f.Fuzz(func(t *testing.T, s string) {
		var c model.GroupAnchor
		var err error
		testutil.Timed(t, "decodeGroupCursor", func() { c, err = DecodeGroupCursor(s) })
		if err != nil {
			if !errors.Is(err, errInvalidCursor) {
				t.Fatalf("error %v is not errInvalidCursor", err)
			}
			return
		}
		if c.FileCount < 2 || c.TotalSizeBytes < 0 {
			t.Fatalf("accepted %+v", c)
		}
		if _, err := protocol.ParseHashAlgorithm(c.HashAlgorithm); err != nil {
			t.Fatalf("accepted algorithm %q", c.HashAlgorithm)
		}
		if raw, err := hex.DecodeString(c.ContentHashHex); err != nil || len(raw) != 32 || strings.ToLower(c.ContentHashHex) != c.ContentHashHex {
			t.Fatalf("accepted hash %q", c.ContentHashHex)
		}
		again, err := DecodeGroupCursor(EncodeCursor(c))
		if err != nil || again != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, again, err)
		}
	})
}

func FuzzDecodeIDCursor(f *testing.F) {
	for _, s := range []string{EncodeIDCursor(1), EncodeIDCursor(9223372036854775807), b64("0"), b64("-1"), b64("+1"),
		b64("01"), b64(" 1"), b64("1\x00"), b64("9223372036854775808"), "MQ==", "MR", "", strings.Repeat("M", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var id int64
		var err error
		testutil.Timed(t, "decodeIDCursor", func() { id, err = DecodeIDCursor(s) })
		if err != nil {
			if !errors.Is(err, errInvalidCursor) {
				t.Fatalf("error %v is not errInvalidCursor", err)
			}
			return
		}
		if id <= 0 {
			t.Fatalf("accepted id %d from %q", id, s)
		}
		if back, err := DecodeIDCursor(EncodeIDCursor(id)); err != nil || back != id {
			t.Fatalf("round trip of %d: %d, %v", id, back, err)
		}
	})
}
