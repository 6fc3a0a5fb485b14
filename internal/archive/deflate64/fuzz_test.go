package deflate64

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzInflate: any input ends in data, ErrCorrupt or an unexpected EOF,
// never a panic, and never more output than Deflate64 can encode: a match
// of 65,538 bytes takes at least 29 bits (fixed codes), under 18,100 bytes
// out per byte in.
func FuzzInflate(f *testing.F) {
	f.Add([]byte{0x03, 0x00}) // an empty fixed block
	f.Add([]byte{0x01, 0x01, 0x00, 0xfe, 0xff, 'x'})
	f.Add([]byte{0x03, 0x02})                           // a match with nothing before it
	f.Add([]byte{0x07})                                 // a reserved block type
	f.Add(packBits(1, 1, 1, 2, 0x30, 8, 0xc5, 8, 0, 7)) // fixed: literal, length-285 code
	f.Fuzz(func(t *testing.T, in []byte) {
		bound := int64(len(in))*maxRatio + 65538
		out, err := io.ReadAll(io.LimitReader(NewReader(bytes.NewReader(in)), bound+1))
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error %v is neither corrupt nor unexpected EOF", err)
		}
		if int64(len(out)) > bound {
			t.Fatalf("%d bytes out of %d in", len(out), len(in))
		}
	})
}

const maxRatio = 65538 * 8 / 29
