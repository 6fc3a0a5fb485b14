package hashing

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/pagesig"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// page is one page of a generated book: its name inside the archive and
// its bytes.
type page struct {
	name string
	data []byte
}

// bookPages returns n pages of pseudo-random content from seed, each of
// another size, named in reading order.
func bookPages(seed uint64, n int) []page {
	out := make([]page, n)
	for i := range out {
		out[i] = page{name: fmt.Sprintf("p%03d.jpg", i+1), data: noise(seed*1000+uint64(i), 3*kib+int(seed%7)*97+i*131)}
	}
	return out
}

// zipBook writes pages (and a ComicInfo.xml when withInfo) as a zip with
// method (zip.Store or zip.Deflate at level), in the order given.
func zipBook(t testing.TB, method uint16, level int, pages []page, withInfo bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	w.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) { return flate.NewWriter(out, level) })
	entries := pages
	if withInfo {
		entries = append([]page{{name: "ComicInfo.xml", data: []byte("<ComicInfo><Title>x</Title></ComicInfo>")}}, pages...)
	}
	for _, p := range entries {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: p.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sevenZipBook packs pages with 7zz (solid or not) and returns the archive.
func sevenZipBook(t testing.TB, pages []page, solid bool) []byte {
	t.Helper()
	if _, err := exec.LookPath("7zz"); err != nil {
		t.Skip("7zz is not installed (scripts/deps.sh)")
	}
	dir := t.TempDir()
	for _, p := range pages {
		if err := os.WriteFile(filepath.Join(dir, p.name), p.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "book.cb7")
	ms := "-ms=off"
	if solid {
		ms = "-ms=on"
	}
	args := []string{"a", "-t7z", "-mx=5", ms, out}
	for _, p := range pages {
		args = append(args, p.name)
	}
	cmd := exec.Command("7zz", args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("7zz: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reversed returns pages in reverse order (the names keep the reading
// order: a zip whose entries were stored in another order).
func reversed(pages []page) []page {
	out := make([]page, len(pages))
	for i, p := range pages {
		out[len(pages)-1-i] = p
	}
	return out
}

// sign records the page signature of the file id at path as the scanner
// does (format, page count, signature and key from the archive's index).
func (e *env) sign(t testing.TB, id int64, path string) {
	t.Helper()
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	pages := make([]pagesig.Page, 0, len(a.Pages()))
	for _, p := range a.Pages() {
		pages = append(pages, pagesig.Page{Size: p.Size, CRC32: p.CRC32, HasCRC: p.HasCRC})
	}
	if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET format = ?, total_pages = ?, page_signature = ?, pages_key = ?
		WHERE id = ?`, string(a.Format()), len(pages), pagesig.Encode(pages), pagesig.Key(pages), id); err != nil {
		t.Fatal(err)
	}
}
