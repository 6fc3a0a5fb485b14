package archive

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// TestDeflate64BrokenPage: a Deflate64 zip from 7zz with one page's stream
// cut short or scrambled reads as archive_corrupt, never a page.
func TestDeflate64BrokenPage(t *testing.T) {
	t.Parallel()
	pages := methodPages(t)
	path := filepath.Join(t.TempDir(), "book.cbz")
	if err := fixtures.SevenZip(path, pages, fixtures.SevenZipOptions{Zip: true, Method: "Deflate64"}); errors.Is(err, fixtures.ErrNo7zz) {
		t.Skip("7zz not installed")
	} else if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	must(t, err)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	f := zr.File[0]
	start, err := f.DataOffset()
	must(t, err)
	for name, damage := range map[string]func([]byte){
		"scrambled": func(b []byte) {
			for i := start; i < start+int64(f.CompressedSize64); i++ {
				b[i] ^= 0x5a
			}
		},
		"zeroed tail": func(b []byte) {
			clear(b[start+int64(f.CompressedSize64)/2 : start+int64(f.CompressedSize64)])
		},
	} {
		broken := bytes.Clone(data)
		damage(broken)
		a := mustOpen(t, setup(t, name+".cbz", broken))
		var page Entry
		for _, p := range a.Pages() {
			if p.Name == f.Name {
				page = p
			}
		}
		_, err := a.ReadEntry(page, 1<<20)
		wantCode(t, err, protocol.ErrArchiveCorrupt)
		must(t, a.Close())
	}
}
