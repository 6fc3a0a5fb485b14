package deflate64

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

const zipMethodDeflate64 = 9

// sample is data with matches near and far: repeats up to 64 KiB back,
// which only Deflate64's distance codes 30 and 31 reach, and long runs
// for length code 285.
func sample(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	block := make([]byte, 40<<10)
	for i := range block {
		block[i] = byte(rng.IntN(256))
	}
	var b bytes.Buffer
	for b.Len() < size {
		b.Write(block)
		b.Write(bytes.Repeat([]byte{'x'}, 70000))
		b.WriteString("page text ")
		block[rng.IntN(len(block))]++
	}
	return b.Bytes()[:size]
}

// sevenZipDeflate64 has 7zz write data with Deflate64 as a zip and returns
// the entry's raw stream.
func sevenZipDeflate64(t testing.TB, data []byte) []byte {
	t.Helper()
	if _, err := exec.LookPath("7zz"); err != nil {
		testutil.SkipUnlessCI(t, "7zz not installed")
	}
	dir := t.TempDir()
	src, out := filepath.Join(dir, "page.bin"), filepath.Join(dir, "book.zip")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("7zz", "a", "-tzip", "-mm=Deflate64", "-mx=9", out, src).CombinedOutput(); err != nil {
		t.Fatalf("7zz: %v: %s", err, b)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f := zr.File[0]
	if f.Method != zipMethodDeflate64 {
		t.Fatalf("method %d, want 9", f.Method)
	}
	raw, err := f.OpenRaw()
	if err != nil {
		t.Fatal(err)
	}
	stream, err := io.ReadAll(raw)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// TestInflate7ZipStreams decodes what 7-Zip's Deflate64 encoder writes,
// 100 KB and 600 KB with matches 64 KiB back.
func TestInflate7ZipStreams(t *testing.T) {
	t.Parallel()
	for _, size := range []int{100_000, 600_000} {
		want := sample(size)
		got, err := io.ReadAll(NewReader(bytes.NewReader(sevenZipDeflate64(t, want))))
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: decoded %d bytes that differ", size, len(got))
		}
	}
}

// TestTruncatedStream: every cut of a real stream is an error, never a
// short success.
func TestTruncatedStream(t *testing.T) {
	t.Parallel()
	stream := sevenZipDeflate64(t, sample(200_000))
	for _, cut := range []int{0, 1, 2, 10, len(stream) / 2, len(stream) - 1} {
		_, err := io.ReadAll(NewReader(bytes.NewReader(stream[:cut])))
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d of %d: %v, want unexpected EOF", cut, len(stream), err)
		}
	}
}

// TestBadCodes: hand-made streams break one rule each.
func TestBadCodes(t *testing.T) {
	t.Parallel()
	for name, stream := range map[string][]byte{
		"reserved block type":     {0x07},
		"stored length check":     {0x01, 0x05, 0x00, 0x00, 0x00},
		"distance before start":   {0x03, 0x02}, // fixed block: a match first, distance 1 with nothing written
		"over-subscribed lengths": packBits(append([]uint{1, 1, 2, 2, 0, 5, 0, 5, 15, 4}, slices.Repeat([]uint{1, 3}, 19)...)...),
	} {
		_, err := io.ReadAll(NewReader(bytes.NewReader(stream)))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// packBits packs (value, width) pairs least significant bit first, as
// deflate does.
func packBits(pairs ...uint) []byte {
	var out []byte
	var acc, n uint
	for i := 0; i < len(pairs); i += 2 {
		acc |= pairs[i] << n
		n += pairs[i+1]
		for n >= 8 {
			out = append(out, byte(acc))
			acc >>= 8
			n -= 8
		}
	}
	return append(out, byte(acc))
}

// TestInflateDeflateBlocks: Go's Deflate writer with literals only
// (Huffman-only) and stored blocks, flushed mid-stream so a stored block
// follows coded data off the byte boundary. Deflate64 reads these as
// Deflate does: they hold no length-258 match.
func TestInflateDeflateBlocks(t *testing.T) {
	t.Parallel()
	want := sample(300_000)
	for _, level := range []int{flate.HuffmanOnly, flate.NoCompression} {
		var buf bytes.Buffer
		w, err := flate.NewWriter(&buf, level)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range [][]byte{want[:1], want[1:1000], want[1000:]} {
			if _, err := w.Write(part); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(NewReader(&buf))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("level %d: %d bytes, %v", level, len(got), err)
		}
	}
}
