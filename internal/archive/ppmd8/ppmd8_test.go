package ppmd8

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestDecode7ZipZips decodes zips 7zz writes over the orders, memory
// sizes and both restore methods, each with an image page, ComicInfo.xml,
// a nearly incompressible and a highly compressible entry and a text
// larger than a 1 MiB model, and compares every entry byte for byte with
// what 7zz x extracts (and, through archive/zip, with its CRC).
func TestDecode7ZipZips(t *testing.T) {
	t.Parallel()
	need7zz(t)
	cases := []struct {
		args []string
		want Params // the header 7zz must write: the test covers what it says
	}{
		{[]string{"-mx=1"}, Params{Order: 4, Memory: 1 << 20, Restore: Restart}},
		{[]string{"-mx=5", "-mmem=1m", "-mo=2"}, Params{Order: 2, Memory: 1 << 20, Restore: Restart}},
		{[]string{"-mx=9", "-mmem=1m", "-mo=16"}, Params{Order: 16, Memory: 1 << 20, Restore: CutOff}},
		{[]string{"-mx=3", "-mmem=1m", "-mo=16", "-ma=0"}, Params{Order: 16, Memory: 1 << 20, Restore: Restart}},
		{[]string{"-mx=7", "-mmem=8m", "-mo=6", "-ma=1"}, Params{Order: 6, Memory: 8 << 20, Restore: CutOff}},
		// 7-Zip lowers the memory to 16 times the entry's size: 32 MiB here.
		{[]string{"-mx=9", "-mmem=64m", "-mo=16"}, Params{Order: 16, Memory: 32 << 20, Restore: CutOff}},
	}
	entries := bookEntries(t, 1_300_000)
	for _, c := range cases {
		t.Run(c.want.String(), func(t *testing.T) {
			path := sevenZip(t, entries, c.args...)
			want := sevenZipExtract(t, path)
			zr := openZip(t, path)
			zr.RegisterDecompressor(zipMethodPPMd, func(r io.Reader) io.ReadCloser {
				d, err := NewZipReader(r, func(Params) error { return nil })
				if err != nil {
					t.Fatal(err)
				}
				return d
			})
			ppmd := map[string]bool{}
			for _, f := range zr.File {
				if f.Method == zipMethodPPMd {
					ppmd[f.Name] = true
					if p := header(rawStream(t, f)); f.Name == "text.txt" && p != c.want {
						t.Fatalf("%s: 7zz wrote %v", f.Name, p)
					}
				}
				got := readEntry(t, f)
				if !bytes.Equal(got, want[f.Name]) || len(got) != len(entries[f.Name]) {
					t.Fatalf("%s: decoded %d bytes, 7zz extracts %d that differ", f.Name, len(got), len(want[f.Name]))
				}
			}
			for _, name := range []string{"001.png", "ComicInfo.xml", "noise.bin", "runs.bin", "text.txt"} {
				if !ppmd[name] {
					t.Fatalf("7zz stored %s: PPMd did not make it smaller", name)
				}
			}
		})
	}
}

func (p Params) String() string {
	return fmt.Sprintf("%s-o%d-%dm", [...]string{"restart", "cutoff"}[p.Restore], p.Order, p.Memory>>20)
}

func readEntry(t *testing.T, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return b
}

// broken reports whether err is what a damaged stream must give.
func broken(err error) bool {
	return (errors.Is(err, ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF)) && !errors.Is(err, errModel)
}

// TestTruncatedStream: every cut of a real stream is an error, never a
// short success.
func TestTruncatedStream(t *testing.T) {
	t.Parallel()
	stream := firstPPMd(t, sevenZip(t, map[string][]byte{"t.txt": words(60_000, 2)}, "-mx=5"))
	for _, cut := range []int{0, 1, 2, 3, 5, 6, len(stream) / 3, len(stream) - 4, len(stream) - 1} {
		if got, err := decodeAll(stream[:cut]); !broken(err) {
			t.Fatalf("cut at %d of %d: %d bytes, %v; want a corrupt or truncated stream", cut, len(stream), len(got), err)
		}
	}
	if _, err := decodeAll(append(stream, 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a byte after the end mark: %v, want ErrCorrupt", err)
	}
}

// TestFlippedBytes: a stream with one byte changed decodes to an error;
// PPMd has no check of its own, so the end mark (with the coder at zero,
// the input used up) is what catches it.
func TestFlippedBytes(t *testing.T) {
	t.Parallel()
	want := words(80_000, 3)
	stream := firstPPMd(t, sevenZip(t, map[string][]byte{"t.txt": want}, "-mx=9"))
	for _, at := range []int{2, 3, 4, 5, 100, len(stream) / 2, len(stream) - 6, len(stream) - 3, len(stream) - 1} {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(stream)
			bad[at] ^= x
			got, err := decodeAll(bad)
			if err == nil && bytes.Equal(got, want) {
				continue // a flip in the coder's slack can leave the data intact
			}
			if !broken(err) {
				t.Fatalf("byte %d of %d ^ %#x: %d bytes, %v; want an error", at, len(stream), x, len(got), err)
			}
		}
	}
}

// TestBadHeaders: each bad zip header gives its own clear error.
func TestBadHeaders(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		h    int
		want error
		text string
	}{
		{"order 1", 0x0000, ErrCorrupt, "model order 1"},
		{"restore 3", 0x3005, ErrCorrupt, "restore method 3"},
		{"restore 15", 0xF005, ErrCorrupt, "restore method 15"},
		{"freeze", 0x2005, ErrUnsupported, "restore method 2 (freeze)"},
	} {
		_, err := NewZipReader(bytes.NewReader(append(le16(c.h), 0, 0, 0, 0)), func(Params) error { return nil })
		if !errors.Is(err, c.want) || !bytes.Contains([]byte(err.Error()), []byte(c.text)) {
			t.Errorf("%s: %v, want %v with %q", c.name, err, c.want, c.text)
		}
	}
	if _, err := NewZipReader(bytes.NewReader([]byte{5}), nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("one header byte: %v", err)
	}
	// The largest claim parses (256 MiB) and goes to accept before any
	// allocation; a refusal is returned as is.
	refused := errors.New("over the limit")
	var seen Params
	_, err := NewZipReader(bytes.NewReader(le16(0x0FF5)), func(p Params) error { seen = p; return refused })
	if err != refused || seen != (Params{Order: 6, Memory: 256 << 20, Restore: Restart}) {
		t.Errorf("256 MiB claim: %v, saw %+v", err, seen)
	}
	for _, p := range []Params{{Order: 6, Memory: 257 << 20}, {Order: 17, Memory: 1 << 20}, {Order: 6, Memory: 1 << 19}} {
		if _, err := NewReader(bytes.NewReader(nil), p); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%+v: %v, want ErrCorrupt", p, err)
		}
	}
	// A coder whose first four bytes are all ones cannot be valid.
	if _, err := decodeAll(append(le16(0x0005), 0xff, 0xff, 0xff, 0xff, 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("code 0xFFFFFFFF: %v", err)
	}
}

// TestReadAfterClose: a closed reader fails instead of touching its
// released model.
func TestReadAfterClose(t *testing.T) {
	r, err := NewReader(bytes.NewReader(make([]byte, 8)), Params{Order: 2, Memory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if n, err := r.Read(make([]byte, 4)); n != 0 || err == nil {
		t.Fatalf("read after close: %d, %v", n, err)
	}
}
