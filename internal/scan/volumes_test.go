package scan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// TestMultiVolumeBooks scans RAR volume sets as WinRAR writes them: each set
// is one book under its first volume, with the pages of every volume, and
// no later volume is ever a book of its own.
func TestMultiVolumeBooks(t *testing.T) {
	e := setup(t)
	pagesOf, err := fixtures.Pages(7, fixtures.PageOptions{W: 8, H: 8})
	must(t, err)
	v5, v4 := fixtures.RAR5Volumes(pagesOf, 3), fixtures.RAR4Volumes(pagesOf, 3)
	sizes := 0
	for i, name := range []string{"Saga v01.part1.rar", "Saga v01.part2.rar", "Saga v01.part3.rar"} {
		e.file("Saga/"+name, v5[i], t0.Add(time.Duration(i)*time.Minute))
		sizes += len(v5[i])
	}
	for i, name := range []string{"Book.rar", "Book.r00", "Book.r01"} {
		e.file("Old/"+name, v4[i], t0)
	}
	e.file("Saga/Saga v02.cbz", cbz(t, "", pages(2)...), t0)
	e.scan()
	book := `SELECT relative_path || ' ' || format || ' ' || total_pages || ' ' || ifnull(volumes, 1) || ' ' ||
		ifnull(analysis_error_code, 'ok') FROM library_files WHERE is_missing = 0 ORDER BY relative_path`
	want := []string{"Old/Book.rar rar 7 3 ok", "Saga/Saga v01.part1.rar rar 7 3 ok", "Saga/Saga v02.cbz zip 2 1 ok"}
	if got := e.rows(book); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("books:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := e.one(`SELECT size_bytes || ' ' || mtime_ns FROM library_files WHERE relative_path = 'Saga/Saga v01.part1.rar'`); got !=
		fmt.Sprint(sizes, " ", t0.Add(2*time.Minute).UnixNano()) {
		t.Fatalf("the set's signature %q: want the sum of its sizes and its newest mtime", got)
	}
	if got := e.one(`SELECT count(DISTINCT series_id) FROM library_files WHERE relative_path LIKE 'Saga/%'`); got != "1" {
		t.Fatalf("the set and its neighbour fall in %s series", got)
	}
	if got := e.one(`SELECT count(*) FROM scan_errors`); got != "0" {
		t.Fatalf("%s scan errors for complete sets", got)
	}

	t.Run("a change to a later volume changes the book", func(t *testing.T) {
		e.file("Saga/Saga v01.part3.rar", v5[2], t0.Add(time.Hour))
		if c := e.scan(); c.Changed != 1 || c.Added != 0 {
			t.Fatalf("counts %+v, want one change", c)
		}
	})
	t.Run("a missing volume is archive_incomplete naming it", func(t *testing.T) {
		must(t, os.Remove(filepath.Join(e.root, "Saga", "Saga v01.part2.rar")))
		e.scan()
		got := e.one(`SELECT ifnull(volumes, 1) || ' ' || analysis_error_code || ': ' || analysis_error_message FROM library_files
			WHERE relative_path = 'Saga/Saga v01.part1.rar'`)
		if !strings.HasPrefix(got, "2 archive_incomplete") || !strings.Contains(got, "volume Saga v01.part2.rar is missing") {
			t.Fatalf("book without its second volume: %q", got)
		}
	})
	t.Run("later volumes without their first are reported once", func(t *testing.T) {
		e.file("Orphans/Lost.part2.rar", v5[1], t0)
		e.file("Orphans/Lost.part3.rar", v5[2], t0)
		e.scan()
		if got := e.one(`SELECT count(*) FROM library_files WHERE relative_path LIKE 'Orphans/%'`); got != "0" {
			t.Fatalf("%s rows for later volumes", got)
		}
		got := e.rows(`SELECT relative_path || ' ' || error_code || ': ' || message FROM scan_errors
			WHERE session_id = (SELECT max(id) FROM scan_sessions)`)
		if len(got) != 1 || !strings.HasPrefix(got[0], "Orphans/Lost.part1.rar archive_incomplete: Lost.part2.rar, Lost.part3.rar continue") {
			t.Fatalf("scan errors %q, want one for the set", got)
		}
	})
	t.Run("a later volume that is an archive of its own is a book", func(t *testing.T) {
		e.file("Odd/Notes.part2.rar", fixtures.RAR5(pagesOf[:2]), t0)
		e.scan()
		if got := e.one(`SELECT total_pages FROM library_files WHERE relative_path = 'Odd/Notes.part2.rar'`); got != "2" {
			t.Fatalf("Odd/Notes.part2.rar: %q pages", got)
		}
	})
}

// TestMultiVolumeMove follows a set moved to another folder by the digest
// of all its volumes, and never takes one volume for the book.
func TestMultiVolumeMove(t *testing.T) {
	e := setup(t)
	pagesOf, err := fixtures.Pages(7, fixtures.PageOptions{W: 8, H: 8})
	must(t, err)
	vols := fixtures.RAR5Volumes(pagesOf, 3)
	names := []string{"Saga v01.part1.rar", "Saga v01.part2.rar", "Saga v01.part3.rar"}
	for i, name := range names {
		e.file("Saga/"+name, vols[i], t0)
	}
	e.scan()
	e.hashAll()
	id := e.one(`SELECT id FROM library_files WHERE relative_path = 'Saga/Saga v01.part1.rar'`)
	must(t, os.MkdirAll(filepath.Join(e.root, "Saga (2012)"), 0o755))
	for _, name := range names {
		must(t, os.Rename(filepath.Join(e.root, "Saga", name), filepath.Join(e.root, "Saga (2012)", name)))
	}
	if c := e.scan(); c.Moved != 1 || c.Added != 0 || c.Missing != 0 {
		t.Fatalf("counts %+v, want the set moved", c)
	}
	if got := e.one(`SELECT id || ' ' || volumes FROM library_files WHERE relative_path = 'Saga (2012)/Saga v01.part1.rar'`); got != id+" 3" {
		t.Fatalf("moved set %q, want row %s with 3 volumes", got, id)
	}

	// A copy of the first volume alone, where the set was, is a file of its
	// own: same name, never the book.
	e.file("Saga/Saga v01.part1.rar", vols[0], t0)
	if c := e.scan(); c.Moved != 0 || c.Added != 1 {
		t.Fatalf("counts %+v: a lone first volume must not take the set's row", c)
	}
}
