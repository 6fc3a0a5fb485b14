package ppmd8

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzPPMd8: any zip PPMd stream ends in data, ErrCorrupt, ErrUnsupported
// or an unexpected EOF, never a panic or an inconsistent model. The
// memory field is forced to 1 MiB (bits 4-11) so each run allocates
// little; ParseZipHeader's handling of it is tested on its own. The
// corpus holds real 7-Zip streams (testdata/fuzz/FuzzPPMd8). Output is cut
// at 256 KiB: a coder that stays in its likeliest symbol yields thousands
// of bytes per input byte, and long runs only slow the search.
func FuzzPPMd8(f *testing.F) {
	f.Add([]byte{0x05, 0x00, 0, 0, 0, 0})                // order 6, an empty coder
	f.Add([]byte{0x0f, 0x10, 0x00, 0x10, 0x20, 0x30, 0}) // order 16, cut off
	f.Add([]byte{0x00, 0x00, 0, 0, 0, 0})                // order 1
	f.Add([]byte{0x05, 0x20, 0, 0, 0, 0})                // freeze
	f.Add([]byte{0x05, 0x00, 0xff, 0xff, 0xff, 0xff})    // code 0xFFFFFFFF
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) >= 2 {
			in = bytes.Clone(in)
			in[0] &= 0x0f
			in[1] &= 0xf0
		}
		r, err := NewZipReader(bytes.NewReader(in), func(p Params) error { return nil })
		if err == nil {
			_, err = io.Copy(io.Discard, io.LimitReader(r, 1<<18))
		}
		if errors.Is(err, errModel) {
			t.Fatalf("inconsistent model: %v", err)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error %v is neither corrupt, unsupported nor unexpected EOF", err)
		}
	})
}
