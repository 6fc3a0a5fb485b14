package scan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// TestFolderBooks: a folder of page images is one book, its images pages
// that are hashed on their own but are no books; cover art beside archives
// is no book; other loose images stay books. Changes to a page change the
// book, and a folder that stops being a folder book gives its images back.
func TestFolderBooks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	jpeg := func(seed int) []byte {
		t.Helper()
		data, err := fixtures.Image(fixtures.JPEG, 8, 12, seed)
		must(t, err)
		return data
	}
	for i := 1; i <= 12; i++ { // natural order: 2 before 10
		e.file(fmt.Sprintf("Berserk/Vol 01/%d.jpg", i), jpeg(i), t0)
	}
	e.file("Berserk/Vol 01/ComicInfo.xml", []byte(ci("Number", "1")), t0)
	e.file("Berserk/Vol 01/notes.txt", []byte("not indexed"), t0)
	e.file("Saga/Saga 001.cbz", cbz(t, "", pages(3)...), t0)
	e.file("Saga/Cover.JPG", jpeg(50), t0)
	e.file("Saga/folder.png", jpeg(51), t0)
	e.file("Saga/back.jpg", jpeg(52), t0)
	e.file("Art/one.jpg", jpeg(60), t0) // a single image: a loose book
	e.file("root.jpg", jpeg(61), t0)
	e.file("root2.jpg", jpeg(62), t0) // images at the root are never a folder book

	c := e.scan()
	roles := func() string {
		return strings.Join(e.rows(`SELECT relative_path || ' ' || role || ' ' || COALESCE(format, '-') || ' ' || COALESCE(CAST(total_pages AS TEXT), '-')
			FROM library_files WHERE is_missing = 0 AND relative_path NOT LIKE 'Berserk/Vol 01/_%' ORDER BY relative_path`), "\n")
	}
	want := strings.Join([]string{
		"Art/one.jpg book image 1",
		"Berserk/Vol 01/ folder folder 12",
		"Saga/Cover.JPG sidecar image 1",
		"Saga/Saga 001.cbz book zip 3",
		"Saga/back.jpg book image 1",
		"Saga/folder.png sidecar image 1",
		"root.jpg book image 1",
		"root2.jpg book image 1",
	}, "\n")
	if got := roles(); got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
	if c.FilesSeen != 19 || c.Added != 20 || c.ErrorCount != 0 {
		t.Fatalf("counts %+v: want 19 files seen (a folder is no file), 20 rows and no error", c)
	}

	t.Run("pages", func(t *testing.T) {
		got := e.one(`SELECT count(*) || ' ' || sum(CASE WHEN role = 'page' THEN 1 ELSE 0 END) || ' ' || sum(CASE WHEN series_id IS NULL THEN 1 ELSE 0 END) || ' ' || sum(needs_hash)
			FROM library_files WHERE relative_path LIKE 'Berserk/Vol 01/_%'`)
		if got != "12 12 12 12" {
			t.Fatalf("pages: count, pages, without series, to hash = %s; want 12 of each", got)
		}
		if got := e.one(`SELECT needs_hash || ' ' || (CASE WHEN series_id IS NOT NULL THEN 1 ELSE 0 END) FROM library_files WHERE role = 'folder'`); got != "0 1" {
			t.Fatalf("the folder book: needs_hash, has a series = %s; want 0 1 (never hashed, a book)", got)
		}
	})
	t.Run("series", func(t *testing.T) {
		got := e.rows(`SELECT s.name || ':' || s.file_count FROM series s ORDER BY s.name`)
		want := []string{"Art:1", "Berserk:1", "Saga:2", "root:1", "root2:1"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("series %q, want %q (art is no book, pages are no books)", got, want)
		}
		if got := e.one(`SELECT m.number FROM file_metadata m JOIN library_files f ON f.id = m.file_id WHERE f.role = 'folder'`); got != "1" {
			t.Fatalf("the folder book's ComicInfo number %q", got)
		}
	})
	t.Run("unchanged", func(t *testing.T) {
		c := e.scan()
		if c.Changed+c.Added+c.Missing != 0 {
			t.Fatalf("a rescan of an unchanged library wrote %+v", c)
		}
	})
	t.Run("a changed page changes the book", func(t *testing.T) {
		// An edit stamps the page with the current time, newer than the
		// folder's own mtime.
		edited := time.Now().Add(time.Minute).Truncate(time.Second)
		e.file("Berserk/Vol 01/7.jpg", jpeg(7), edited)
		c := e.scan()
		if c.Changed != 2 {
			t.Fatalf("changed %d, want the page and its book", c.Changed)
		}
		if got := e.one(`SELECT mtime_ns FROM library_files WHERE role = 'folder'`); got != fmt.Sprint(edited.UnixNano()) {
			t.Fatalf("folder mtime %s, want the newest page's", got)
		}
	})
	t.Run("a folder that gains an archive gives its images back", func(t *testing.T) {
		e.file("Berserk/Vol 01/extra.cbz", cbz(t, "", pages(2)...), t0)
		e.scan()
		got := e.one(`SELECT sum(CASE WHEN role = 'book' THEN 1 ELSE 0 END) || ' ' || sum(CASE WHEN role = 'page' THEN 1 ELSE 0 END) || ' ' || sum(CASE WHEN series_id IS NOT NULL THEN 1 ELSE 0 END)
			FROM library_files WHERE relative_path LIKE 'Berserk/Vol 01/_%' AND is_missing = 0`)
		if got != "13 0 13" {
			t.Fatalf("books, pages, in a series = %s; want 13 0 13", got)
		}
		if got := e.one(`SELECT is_missing FROM library_files WHERE role = 'folder'`); got != "1" {
			t.Fatalf("the folder book is_missing = %s, want 1", got)
		}
		must(t, os.Remove(filepath.Join(e.root, "Berserk/Vol 01/extra.cbz")))
		e.scan()
		if got := e.one(`SELECT is_missing || ' ' || role FROM library_files WHERE relative_path = 'Berserk/Vol 01/'`); got != "0 folder" {
			t.Fatalf("the folder book came back as %q", got)
		}
		if got := e.one(`SELECT sum(CASE WHEN role = 'page' THEN 1 ELSE 0 END) FROM library_files WHERE relative_path LIKE 'Berserk/Vol 01/_%' AND is_missing = 0`); got != "12" {
			t.Fatalf("%s pages again, want 12", got)
		}
	})
}

// TestFolderBookOfTenThousandImages: issue 19's bad input — one folder of
// 10,000 images is one book of 10,000 pages, scanned without error.
func TestFolderBookOfTenThousandImages(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("10,000 files")
	}
	e := setup(t)
	e.exec.cfg.BatchSize = 500
	img, err := fixtures.Image(fixtures.JPEG, 4, 4, 1)
	must(t, err)
	dir := filepath.Join(e.root, "Big", "Vol 01")
	must(t, os.MkdirAll(dir, 0o755))
	for i := range 10_000 {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d.jpg", i)), img, 0o644))
	}
	c := e.scan()
	if c.ErrorCount != 0 || c.FilesSeen != 10_000 {
		t.Fatalf("counts %+v", c)
	}
	if got := e.one(`SELECT role || ' ' || total_pages || ' ' || size_bytes FROM library_files WHERE relative_path = 'Big/Vol 01/'`); got != fmt.Sprintf("folder 10000 %d", 10_000*len(img)) {
		t.Fatalf("folder book %q", got)
	}
	if got := e.one(`SELECT count(*) FROM series`); got != "1" {
		t.Fatalf("%s series, want 1", got)
	}
}

// TestSelfExtractingArchives: a self-extracting .exe is no comic by
// default; a library that adds .exe to scan.extensions gets it read as
// the archive inside.
func TestSelfExtractingArchives(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pagesOf, err := fixtures.Pages(3, fixtures.PageOptions{W: 8, H: 8})
	must(t, err)
	stub := append([]byte("MZ\x90\x00"), make([]byte, 4096)...)
	e.file("Old/Book 01.exe", append(stub, fixtures.RAR5(pagesOf)...), t0)
	e.file("Old/Book 02.cbz", cbz(t, "", pages(2)...), t0)
	e.scan()
	if got := e.one(`SELECT count(*) FROM library_files`); got != "1" {
		t.Fatalf("%s rows: the .exe was indexed by default", got)
	}
	e.set(map[string]string{"scan.extensions": ".cbz,.exe"})
	e.scan()
	if got := e.one(`SELECT format || ' ' || total_pages || ' ' || COALESCE(analysis_error_code, 'ok') FROM library_files
		WHERE relative_path = 'Old/Book 01.exe'`); got != "rar 3 ok" {
		t.Fatalf("the .exe: %q, want rar 3 ok", got)
	}
}

// TestTrashIsNeverScanned: what a delete job moved into a library's trash
// is not indexed again, and its row stays missing.
func TestTrashIsNeverScanned(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("Saga/Saga 01.cbz", cbz(t, "", pages(2)...), t0)
	e.file(protocol.TrashDir+"/7/Inbox/Saga 01.cbz", cbz(t, "", pages(2)...), t0)
	e.scan()
	if got := e.one(`SELECT ` + storetest.Concat("relative_path", ",", "relative_path") + ` FROM library_files`); got != "Saga/Saga 01.cbz" {
		t.Fatalf("indexed %q", got)
	}
}
