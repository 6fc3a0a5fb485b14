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
// that fills a 1 MiB order-16 model several times over, and compares every
// entry byte for byte with what 7zz x extracts (and, through archive/zip,
// with its CRC).
func TestDecode7ZipZips(t *testing.T) {
	t.Parallel()
	need7zz(t)
	cases := []struct {
		args []string
		want Params // the header 7zz must write: the test covers what it says
		full bool   // the text fills the model: it restarts or is cut off
	}{
		{[]string{"-mx=1"}, Params{Order: 4, Memory: 1 << 20, Restore: Restart}, false},
		{[]string{"-mx=5", "-mmem=1m", "-mo=2"}, Params{Order: 2, Memory: 1 << 20, Restore: Restart}, false},
		{[]string{"-mx=9", "-mmem=1m", "-mo=16"}, Params{Order: 16, Memory: 1 << 20, Restore: CutOff}, true},
		{[]string{"-mx=3", "-mmem=1m", "-mo=16", "-ma=0"}, Params{Order: 16, Memory: 1 << 20, Restore: Restart}, true},
		{[]string{"-mx=7", "-mmem=8m", "-mo=6", "-ma=1"}, Params{Order: 6, Memory: 8 << 20, Restore: CutOff}, false},
	}
	entries := bookEntries(t, 300_000)
	for _, c := range cases {
		t.Run(c.want.String(), func(t *testing.T) {
			path := sevenZip(t, entries, c.args...)
			want := sevenZipExtract(t, path)
			zr := openZip(t, path)
			ppmd := map[string]bool{}
			for _, f := range zr.File {
				if f.Method == zipMethodPPMd {
					ppmd[f.Name] = true
				}
				if f.Name == "text.txt" {
					checkText(t, rawStream(t, f), want[f.Name], c.want, c.full)
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
	// Read from stdin, 7-Zip keeps the memory asked for: a 64 MiB model.
	t.Run("cutoff-o16-64m", func(t *testing.T) {
		text := entries["text.txt"]
		path := sevenZipStdin(t, text, "-mx=9", "-mmem=64m", "-mo=16")
		f := openZip(t, path).File[0]
		checkText(t, rawStream(t, f), sevenZipExtract(t, path)["text.txt"], Params{Order: 16, Memory: 64 << 20, Restore: CutOff}, false)
		if got := readEntry(t, f); !bytes.Equal(got, text) {
			t.Fatalf("decoded %d bytes that differ from the %d written", len(got), len(text))
		}
	})
}

// checkText decodes a text entry's stream: its header must say want, its
// bytes be 7-Zip's, and its model must have filled when full says so.
func checkText(t *testing.T, stream, extracted []byte, want Params, full bool) {
	t.Helper()
	if p := header(stream); p != want {
		t.Fatalf("7zz wrote %v, want %v", p, want)
	}
	r, err := NewZipReader(bytes.NewReader(stream), func(Params) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, extracted) {
		t.Fatalf("text: %d bytes, %v; 7zz extracts %d", len(got), err, len(extracted))
	}
	if filled := r.m.restores > 0; filled != full {
		t.Fatalf("text: the model filled %d times", r.m.restores)
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
