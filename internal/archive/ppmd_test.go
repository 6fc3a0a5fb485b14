package archive

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	_ "image/jpeg" // the pages 7zz packs
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// ppmdBook has 7zz write pages and a ComicInfo.xml as a zip with PPMd at
// -mx=9 (cut-off restore) in a 1 MiB model, so the larger pages overflow
// it, and returns the file's bytes.
func ppmdBook(t *testing.T, pages []fixtures.File) []byte {
	t.Helper()
	files := append(pages, fixtures.File{Name: "ComicInfo.xml", Data: []byte("<ComicInfo><Series>PPMd</Series></ComicInfo>")})
	path := filepath.Join(t.TempDir(), "book.cbz")
	err := fixtures.SevenZip(path, files, fixtures.SevenZipOptions{Zip: true, Method: "PPMd", Extra: []string{"-mx=9", "-mmem=1m"}})
	if errors.Is(err, fixtures.ErrNo7zz) {
		testutil.SkipUnlessCI(t, "7zz not installed")
	}
	must(t, err)
	data, err := os.ReadFile(path)
	must(t, err)
	return data
}

// TestZipPPMdBook: a PPMd cbz opens, lists its pages, reads each back as
// written, and its first page decodes as an image, as the cover renderer
// and the page endpoint read it.
func TestZipPPMdBook(t *testing.T) {
	t.Parallel()
	pages, err := fixtures.Pages(4, fixtures.PageOptions{W: 900, H: 1300})
	must(t, err)
	a := mustOpen(t, setup(t, "book.cbz", ppmdBook(t, pages)))
	if len(a.Pages()) != len(pages) {
		t.Fatalf("%d pages listed, want %d", len(a.Pages()), len(pages))
	}
	checkMethod(t, a, pages, "")
	first, err := a.ReadEntry(a.Pages()[0], 8<<20)
	must(t, err)
	img, format, err := image.Decode(bytes.NewReader(first))
	if err != nil || format != "jpeg" || img.Bounds().Dx() != 900 {
		t.Fatalf("first page: %v, %q, %v", img.Bounds(), format, err)
	}
}

// TestZipPPMdBrokenPage: damage to a page's PPMd stream or header gives
// the error that says what is wrong, never a page.
func TestZipPPMdBrokenPage(t *testing.T) {
	t.Parallel()
	pages, err := fixtures.Pages(2, fixtures.PageOptions{W: 300, H: 400})
	must(t, err)
	data := ppmdBook(t, pages)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	var f *zip.File
	for _, e := range zr.File {
		if strings.HasSuffix(e.Name, ".jpg") && f == nil {
			f = e
		}
	}
	if f.Method != zipMethodPPMd {
		t.Fatalf("%s: method %d, not PPMd", f.Name, f.Method)
	}
	start, err := f.DataOffset()
	must(t, err)
	end := start + int64(f.CompressedSize64)
	header := func(v uint16) func([]byte) { return func(b []byte) { binary.LittleEndian.PutUint16(b[start:], v) } }
	for _, c := range []struct {
		name   string
		damage func([]byte)
		code   string
		text   string
	}{
		{"scrambled", func(b []byte) {
			for i := start + 2; i < end; i++ {
				b[i] ^= 0x5a
			}
		}, protocol.ErrArchiveCorrupt, ""},
		{"zeroed tail", func(b []byte) { clear(b[(start+end)/2 : end]) }, protocol.ErrArchiveCorrupt, ""},
		{"order 1", header(0x00F0), protocol.ErrArchiveCorrupt, "model order 1"},
		{"restore method 3", header(0x3005), protocol.ErrArchiveCorrupt, "restore method 3"},
		{"freeze", header(0x2005), protocol.ErrUnsupportedCompression, "zip method 98 (PPMd)"},
		{"256 MiB model", header(0x0FF5), protocol.ErrSourceTooLarge, "PPMd model of 256 MiB"},
	} {
		broken := bytes.Clone(data)
		c.damage(broken)
		a := mustOpen(t, setup(t, c.name+".cbz", broken))
		if len(a.Pages()) != len(pages) {
			t.Fatalf("%s: %d pages listed", c.name, len(a.Pages()))
		}
		var page Entry
		for _, p := range a.Pages() {
			if p.Name == f.Name {
				page = p
			}
		}
		_, err := a.ReadEntry(page, 1<<20)
		if err == nil {
			t.Fatalf("%s: %s reads", c.name, page.Name)
		}
		wantCode(t, err, c.code)
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %q does not say %q", c.name, err, c.text)
		}
		must(t, a.Close())
	}
}
