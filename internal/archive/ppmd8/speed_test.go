package ppmd8

import (
	"archive/zip"
	"fmt"
	"io"
	"os/exec"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// BenchmarkDecode decodes a PPMd book (six 1000×1500 JPEG pages, a 4 MB
// text and the mixed entries of the tests) through archive/zip, checking
// every CRC, beside `7zz t -mmt=1` on the same file: 7-Zip's single-thread
// decompression floor, process start included (a few ms of the run). At
// -mx=5 (order 6, restart) and -mx=9 (order 12, cut off, a 64 MiB model
// for the text); bytes per second are the entries' decoded bytes.
func BenchmarkDecode(b *testing.B) {
	need7zz(b)
	entries := bookEntries(b, 4<<20)
	for i := range 6 {
		page, err := fixtures.Image(fixtures.JPEG, 1000, 1500, 10+i)
		if err != nil {
			b.Fatal(err)
		}
		entries[fmt.Sprintf("%03d.jpg", 2+i)] = page
	}
	var total int64
	for _, data := range entries {
		total += int64(len(data))
	}
	for _, level := range []string{"-mx=5", "-mx=9"} {
		path := sevenZip(b, entries, level)
		b.Run("ppmd8"+level, func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				if n := decodeZip(b, path); n != total {
					b.Fatalf("%d bytes, want %d", n, total)
				}
			}
		})
		b.Run("7zz_t"+level, func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				if out, err := exec.Command("7zz", "t", "-mmt=1", path).CombinedOutput(); err != nil {
					b.Fatalf("7zz t: %v\n%s", err, out)
				}
			}
		})
	}
}

// decodeZip reads every entry of path, as 7zz t does, and returns the
// bytes decoded.
func decodeZip(b *testing.B, path string) int64 {
	zr, err := zip.OpenReader(path)
	if err != nil {
		b.Fatal(err)
	}
	defer zr.Close()
	zr.RegisterDecompressor(zipMethodPPMd, func(r io.Reader) io.ReadCloser {
		d, err := NewZipReader(r, func(Params) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		return d
	})
	var n int64
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			b.Fatal(err)
		}
		m, err := io.Copy(io.Discard, rc)
		if err != nil {
			b.Fatalf("%s: %v", f.Name, err)
		}
		n += m
		rc.Close()
	}
	return n
}
