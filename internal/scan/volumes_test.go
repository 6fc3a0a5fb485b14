package scan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestMultiVolumeBooks scans RAR volume sets as WinRAR writes them: each set
// is one book under its first volume, with the pages of every volume, and
// no later volume is ever a book of its own.
func TestMultiVolumeBooks(t *testing.T) {
	t.Parallel()
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
	book := `SELECT relative_path || ' ' || format || ' ' || total_pages || ' ' || COALESCE(volumes, 1) || ' ' ||
		COALESCE(analysis_error_code, 'ok') FROM library_files WHERE is_missing = 0 ORDER BY relative_path`
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
		got := e.one(`SELECT COALESCE(volumes, 1) || ' ' || analysis_error_code || ': ' || analysis_error_message FROM library_files
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

// TestOldVolumesWithoutFirst: old-style later volumes (.r00, .r01) whose
// Book.rar is gone are one archive_incomplete scan error on Book.rar's
// path, and no book; sharpcompress's RAR 2.x set and a split zip's .z01
// (from ../shared, when present) likewise.
func TestOldVolumesWithoutFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pagesOf, err := fixtures.Pages(7, fixtures.PageOptions{W: 8, H: 8})
	must(t, err)
	v4 := fixtures.RAR4Volumes(pagesOf, 3)
	e.file("Old/Book.r00", v4[1], t0)
	e.file("Old/Book.r01", v4[2], t0)
	want := []string{"Old/Book.rar archive_incomplete: Book.r00, Book.r01 continue a multi-volume archive whose first volume, Book.rar, is not in the folder"}
	if src := filepath.Join(testutil.RepoRoot(t), "..", "shared", "fixtures", "realworld", "sharpcompress"); dirExists(src) {
		for i := range 6 {
			name := fmt.Sprintf("Rar2.multi.r%02d", i)
			data, err := os.ReadFile(filepath.Join(src, name))
			must(t, err)
			e.file("Rar2/"+name, data, t0)
		}
		want = append(want, "Rar2/Rar2.multi.rar archive_incomplete: Rar2.multi.r00, Rar2.multi.r01, Rar2.multi.r02, "+
			"Rar2.multi.r03, Rar2.multi.r04, Rar2.multi.r05 continue a multi-volume archive whose first volume, Rar2.multi.rar, is not in the folder")
		// A split zip's first part without its .zip, likewise.
		data, err := os.ReadFile(filepath.Join(src, "Infozip.nocomp.multi.z01"))
		must(t, err)
		e.file("Split/Infozip.nocomp.multi.z01", data, t0)
		want = append(want, "Split/Infozip.nocomp.multi.zip archive_incomplete: Infozip.nocomp.multi.z01 begin a split zip "+
			"whose last part, Infozip.nocomp.multi.zip, is not in the folder")
	}
	e.scan()
	if got := e.one(`SELECT count(*) FROM library_files`); got != "0" {
		t.Fatalf("%s rows for later volumes", got)
	}
	got := e.rows(`SELECT relative_path || ' ' || error_code || ': ' || message FROM scan_errors ORDER BY relative_path`)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("scan errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSplitZipBook: a split zip Info-ZIP writes (Book.z01 … Book.zip,
// renamed Book.cbz) is
// one book under its .cbz, with every page, the parts' summed size and no
// row for a part; a change to a part changes the book, and without a part
// the book is archive_incomplete naming it.
func TestSplitZipBook(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("zip")
	if err != nil {
		t.Skip("zip not installed (scripts/deps.sh)")
	}
	e := setup(t)
	src := t.TempDir()
	rng := rand.New(rand.NewPCG(41, 2))
	args := []string{"-q", "-0", "-s", "64k", filepath.Join(e.root, "Split", "Book.zip")}
	for i := range 5 {
		data := make([]byte, 30<<10) // noise: the parts cannot shrink below 64 KiB
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("%03d.jpg", i+1)
		must(t, os.WriteFile(filepath.Join(src, name), data, 0o644))
		args = append(args, name)
	}
	must(t, os.MkdirAll(filepath.Join(e.root, "Split"), 0o755))
	cmd := exec.Command(bin, args...)
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zip -s: %v: %s", err, out)
	}
	// zip names the last part .zip; a comic set renamed to .cbz is read too.
	must(t, os.Rename(filepath.Join(e.root, "Split", "Book.zip"), filepath.Join(e.root, "Split", "Book.cbz")))
	parts, err := filepath.Glob(filepath.Join(e.root, "Split", "Book.z[0-9][0-9]"))
	must(t, err)
	if len(parts) < 2 {
		t.Fatalf("zip wrote parts %q: want two or more", parts)
	}
	size := int64(0)
	for _, p := range append(parts, filepath.Join(e.root, "Split", "Book.cbz")) {
		st, err := os.Stat(p)
		must(t, err)
		size += st.Size()
	}
	e.scan()
	book := `SELECT relative_path || ' ' || format || ' ' || total_pages || ' ' || COALESCE(volumes, 1) || ' ' || size_bytes || ' ' ||
		COALESCE(analysis_error_code, 'ok') FROM library_files WHERE is_missing = 0 ORDER BY relative_path`
	want := fmt.Sprintf("Split/Book.cbz zip 5 %d %d ok", len(parts)+1, size)
	if got := e.rows(book); strings.Join(got, "\n") != want {
		t.Fatalf("books:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	t.Run("a change to a part changes the book", func(t *testing.T) {
		later := time.Now().Add(2 * time.Hour)
		must(t, os.Chtimes(parts[0], later, later))
		if c := e.scan(); c.Changed != 1 || c.Added != 0 {
			t.Fatalf("counts %+v, want one change", c)
		}
	})
	t.Run("a missing part is archive_incomplete naming it", func(t *testing.T) {
		must(t, os.Remove(parts[0]))
		e.scan()
		got := e.one(`SELECT analysis_error_code || ': ' || analysis_error_message FROM library_files WHERE relative_path = 'Split/Book.cbz'`)
		if !strings.HasPrefix(got, "archive_incomplete") || !strings.Contains(got, "part Book.z01 is missing") {
			t.Fatalf("book without its first part: %q", got)
		}
	})
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// TestMultiVolumeMove follows a set moved to another folder by the digest
// of all its volumes, and never takes one volume for the book.
func TestMultiVolumeMove(t *testing.T) {
	t.Parallel()
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
