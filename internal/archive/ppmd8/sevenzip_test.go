package ppmd8

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
)

const zipMethodPPMd = 98

// need7zz skips (fails under CI=true) without Debian's 7-Zip.
func need7zz(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("7zz"); err != nil {
		testutil.SkipUnlessCI(tb, "7zz not installed")
	}
}

// words builds size bytes of text from a fixed vocabulary: orders 2..16
// all find context in it, and 1 MB of it overflows a 1 MiB model.
func words(size int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	vocab := strings.Fields(`the page volume chapter issue cover artist writer penciller inker
		colorist letterer publisher series story arc night city hero villain said and of to
		in a was it with for on that his her they from at by an be this which or we 1 2 3 4 5 6 7 8 9 0`)
	var b bytes.Buffer
	for b.Len() < size {
		for range 5 + rng.IntN(12) {
			b.WriteString(vocab[rng.IntN(len(vocab))])
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d.\n", rng.IntN(100000))
	}
	return b.Bytes()[:size]
}

// noise is nearly incompressible: random bytes of 180 values (7.5 bits
// each), so 7-Zip still keeps PPMd for it (random bytes it stores).
func noise(size int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(rng.IntN(180))
	}
	return b
}

// runs is highly compressible: long runs and a short repeated phrase,
// which keep the model in its one-state contexts.
func runs(size int) []byte {
	var b bytes.Buffer
	for b.Len() < size {
		b.Write(make([]byte, 20000))
		b.WriteString(strings.Repeat("ab", 3000))
		b.Write(bytes.Repeat([]byte{0xff}, 9000))
	}
	return b.Bytes()[:size]
}

const comicInfo = `<?xml version="1.0" encoding="utf-8"?>
<ComicInfo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <Title>PPMd</Title><Series>Bindery Test</Series><Number>41</Number>
  <Writer>Dmitry Shkarin</Writer><PageCount>1</PageCount>
</ComicInfo>
`

// bookEntries are the entries every generated zip holds; big is the size
// of the text entry, which overflows a small model.
func bookEntries(tb testing.TB, big int) map[string][]byte {
	tb.Helper()
	page, err := fixtures.Image(fixtures.PNG, 600, 900, 3)
	if err != nil {
		tb.Fatal(err)
	}
	return map[string][]byte{
		"001.png": page, "ComicInfo.xml": []byte(comicInfo), "noise.bin": noise(120_000),
		"runs.bin": runs(300_000), "text.txt": words(big, 1), "empty.txt": nil, "one.txt": []byte("x"),
	}
}

// sevenZip has 7zz write entries to a PPMd zip with the extra switches
// args, and returns its path.
func sevenZip(tb testing.TB, entries map[string][]byte, args ...string) string {
	tb.Helper()
	need7zz(tb)
	dir := tb.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, data := range entries {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	out := filepath.Join(dir, "book.zip")
	cmd := exec.Command("7zz", append(append([]string{"a", "-tzip", "-bd", "-mm=PPMd", "-mmt=1"}, args...), out, "./src/*")...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("7zz %v: %v: %s", args, err, b)
	}
	return out
}

// sevenZipStdin has 7zz write data, read from its standard input, to a
// PPMd zip: not knowing the size, 7-Zip keeps the model memory asked for
// (for a file it lowers it to 16 times the file's size).
func sevenZipStdin(tb testing.TB, data []byte, args ...string) string {
	tb.Helper()
	need7zz(tb)
	out := filepath.Join(tb.TempDir(), "stdin.zip")
	cmd := exec.Command("7zz", append(append([]string{"a", "-tzip", "-bd", "-mm=PPMd", "-mmt=1", "-sitext.txt"}, args...), out)...)
	cmd.Stdin = bytes.NewReader(data)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("7zz %v: %v: %s", args, err, b)
	}
	return out
}

// sevenZipExtract returns what 7zz x extracts from path, by entry name.
func sevenZipExtract(tb testing.TB, path string) map[string][]byte {
	tb.Helper()
	dir := tb.TempDir()
	if b, err := exec.Command("7zz", "x", "-bd", "-y", "-o"+dir, path).CombinedOutput(); err != nil {
		tb.Fatalf("7zz x: %v: %s", err, b)
	}
	got := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.Base(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// rawStream returns the PPMd data of f (the zip header included).
func rawStream(tb testing.TB, f *zip.File) []byte {
	tb.Helper()
	r, err := f.OpenRaw()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// decodeAll decodes a zip PPMd stream with no memory limit.
func decodeAll(stream []byte) ([]byte, error) {
	r, err := NewZipReader(bytes.NewReader(stream), func(Params) error { return nil })
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func header(stream []byte) Params {
	p, _ := ParseZipHeader([2]byte(stream[:2]))
	return p
}

// openZip opens path with this package's decoder for method 98.
func openZip(tb testing.TB, path string) *zip.ReadCloser {
	tb.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { zr.Close() })
	zr.RegisterDecompressor(zipMethodPPMd, func(r io.Reader) io.ReadCloser {
		d, err := NewZipReader(r, func(Params) error { return nil })
		if err != nil {
			return io.NopCloser(errorReader{err})
		}
		return d
	})
	return zr
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// firstPPMd returns the raw stream of the first PPMd entry of path.
func firstPPMd(tb testing.TB, path string) []byte {
	tb.Helper()
	for _, f := range openZip(tb, path).File {
		if f.Method == zipMethodPPMd && f.UncompressedSize64 > 1000 {
			return rawStream(tb, f)
		}
	}
	tb.Fatalf("%s has no PPMd entry", path)
	return nil
}

func le16(v int) []byte { return binary.LittleEndian.AppendUint16(nil, uint16(v)) }
