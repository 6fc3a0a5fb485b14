package scan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestScanLibrary(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("Batman (2016)/Batman 001.cbz", cbz(t, "", pages(3)...), t0)
	e.file("Batman (2016)/Batman 002.cbz", cbz(t, "", append(pages(2), "__MACOSX/._page 1.jpg", "notes.txt")...), t0)
	e.file("Saga v01 #003 (2012).cbz", cbz(t, "", pages(4)...), t0)
	e.file("Misc/deep/x.cbz", cbz(t, ci("Series", "Saga", "Number", "7", "Year", "2013", "Publisher", "Image"), pages(5)...), t0)
	e.file("Misc/readme.txt", []byte("not a comic"), t0)
	e.file(".hidden/y.cbz", cbz(t, "", pages(1)...), t0)
	e.file("Misc/.z.cbz", cbz(t, "", pages(1)...), t0)

	c := e.scan()
	if c.FilesSeen != 4 || c.Added != 4 || c.Unchanged != 0 || c.Missing != 0 || c.ErrorCount != 0 {
		t.Fatalf("counts: %+v", c)
	}
	if c.DirectoriesSeen != 4 { // root, Batman (2016), Misc, Misc/deep
		t.Fatalf("directories: %d", c.DirectoriesSeen)
	}
	got := e.rows(`SELECT f.relative_path, f.format, f.total_pages, f.series_name_raw, s.name, s.year, f.needs_analysis,
		f.needs_cover, f.needs_hash FROM library_files f JOIN series s ON s.id = f.series_id ORDER BY f.relative_path`)
	want := []string{
		"Batman (2016)/Batman 001.cbz|zip|3|Batman|Batman|2016|0|1|1",
		"Batman (2016)/Batman 002.cbz|zip|2|Batman|Batman|2016|0|1|1",
		"Misc/deep/x.cbz|zip|5|Saga|Saga|2013|0|1|1",
		"Saga v01 #003 (2012).cbz|zip|4|Saga|Saga|2013|0|1|1", // joined Saga (Image); first file gives the year
	}
	if !slices.Equal(got, want) {
		t.Fatalf("files:\n%v\nwant\n%v", got, want)
	}
	// Saga by file name (no publisher) joins Saga by ComicInfo (publisher
	// Image): a book without ComicInfo.xml does not split its series.
	if got := e.rows(`SELECT name, publisher, file_count FROM series ORDER BY name_key, publisher_key`); !slices.Equal(got,
		[]string{"Batman||2", "Saga|Image|2"}) {
		t.Fatalf("series: %v", got)
	}
	if c.SeriesCreated != 2 {
		t.Fatalf("series_created %d", c.SeriesCreated)
	}
	if got := e.one(`SELECT m.source || '|' || m.number || '|' || m.publisher FROM file_metadata m
		JOIN library_files f ON f.id = m.file_id WHERE f.relative_path = 'Misc/deep/x.cbz'`); got != "comicinfo|7|Image" {
		t.Fatalf("metadata: %s", got)
	}
	if got := e.one(`SELECT status || '|' || files_seen || '|' || added || '|' || series_created FROM scan_sessions`); got != "succeeded|4|4|2" {
		t.Fatalf("session: %s", got)
	}

	t.Run("rescan writes nothing", func(t *testing.T) {
		before := e.rows(`SELECT id, updated_at FROM library_files ORDER BY id`)
		seriesBefore := e.rows(`SELECT id, updated_at, file_count FROM series ORDER BY id`)
		c := e.scan()
		if c.FilesSeen != 4 || c.Unchanged != 4 || c.Added+c.Changed+c.Missing+c.Restored+c.SeriesCreated != 0 {
			t.Fatalf("counts: %+v", c)
		}
		if after := e.rows(`SELECT id, updated_at FROM library_files ORDER BY id`); !slices.Equal(before, after) {
			t.Fatalf("file rows written:\n%v\n%v", before, after)
		}
		if after := e.rows(`SELECT id, updated_at, file_count FROM series ORDER BY id`); !slices.Equal(seriesBefore, after) {
			t.Fatalf("series rows written")
		}
	})

	t.Run("change, missing, restored", func(t *testing.T) {
		id := e.one(`SELECT id FROM library_files WHERE relative_path = 'Batman (2016)/Batman 002.cbz'`)
		e.file("Batman (2016)/Batman 001.cbz", cbz(t, "", pages(6)...), t0.Add(time.Hour))
		gone := filepath.Join(e.root, "Batman (2016)", "Batman 002.cbz")
		data, _ := os.ReadFile(gone)
		os.Remove(gone)
		c := e.scan()
		if c.Changed != 1 || c.Missing != 1 || c.Unchanged != 2 {
			t.Fatalf("counts: %+v", c)
		}
		if got := e.one(`SELECT total_pages FROM library_files WHERE relative_path = 'Batman (2016)/Batman 001.cbz'`); got != "6" {
			t.Fatalf("pages after change: %s", got)
		}
		if got := e.one(`SELECT is_missing || '|' || (CASE WHEN missing_since IS NOT NULL THEN 1 ELSE 0 END) FROM library_files WHERE id = ?`, id); got != "1|1" {
			t.Fatalf("missing: %s", got)
		}
		if got := e.one(`SELECT file_count FROM series WHERE name = 'Batman'`); got != "1" {
			t.Fatalf("count with one missing: %s", got)
		}
		e.file("Batman (2016)/Batman 002.cbz", data, t0)
		c = e.scan()
		if c.Restored != 1 || c.Changed != 0 || c.Added != 0 {
			t.Fatalf("counts: %+v", c)
		}
		if got := e.one(`SELECT is_missing || '|' || (CASE WHEN missing_since IS NULL THEN 1 ELSE 0 END) || '|' || (CASE WHEN series_id IS NOT NULL THEN 1 ELSE 0 END) FROM library_files WHERE id = ?`, id); got != "0|1|1" {
			t.Fatalf("restored: %s", got)
		}
		if got := e.one(`SELECT file_count FROM series WHERE name = 'Batman'`); got != "2" {
			t.Fatalf("count restored: %s", got)
		}
	})
}

func TestSeriesIdentity(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("A/one.cbz", cbz(t, ci("Series", "batman", "Year", "2011", "Publisher", "DC"), pages(1)...), t0)
	e.file("B/two.cbz", cbz(t, ci("Series", "Batman", "Year", "1999", "Publisher", "dc"), pages(1)...), t0)
	e.file("C/three.cbz", cbz(t, ci("Series", "STRASSE", "Publisher", "DC"), pages(1)...), t0)
	e.file("D/four.cbz", cbz(t, ci("Series", "Straße", "Publisher", "DC"), pages(1)...), t0)
	c := e.scan()
	if c.SeriesCreated != 2 {
		t.Fatalf("series created %d", c.SeriesCreated)
	}
	// First file by path gives name, publisher and year.
	got := e.rows(`SELECT name, publisher, year, file_count FROM series ORDER BY name_key`)
	if !slices.Equal(got, []string{"batman|DC|2011|2", "STRASSE|DC|NULL|2"}) {
		t.Fatalf("series: %v", got)
	}
	t.Run("a new file joins, metadata stays", func(t *testing.T) {
		e.file("0/zero.cbz", cbz(t, ci("Series", "BATMAN", "Year", "1980", "Publisher", "DC"), pages(1)...), t0)
		c := e.scan()
		if c.SeriesCreated != 0 || c.Added != 1 {
			t.Fatalf("counts %+v", c)
		}
		if got := e.rows(`SELECT name, year, file_count FROM series ORDER BY name_key`); !slices.Equal(got,
			[]string{"batman|2011|3", "STRASSE|NULL|2"}) {
			t.Fatalf("series: %v", got)
		}
	})
	t.Run("empty series removed", func(t *testing.T) {
		os.RemoveAll(filepath.Join(e.root, "C"))
		os.RemoveAll(filepath.Join(e.root, "D"))
		e.scan()
		// Missing files keep their link: the series stays with no present file.
		if got := e.rows(`SELECT name, file_count FROM series ORDER BY name_key`); !slices.Equal(got, []string{"batman|3", "STRASSE|0"}) {
			t.Fatalf("series: %v", got)
		}
		e.file("C/three.cbz", cbz(t, ci("Series", "Other", "Publisher", "DC"), pages(1)...), t0.Add(time.Hour))
		e.scan()
		if got := e.rows(`SELECT name, file_count FROM series ORDER BY name_key`); !slices.Equal(got, []string{"batman|3", "Other|1", "STRASSE|0"}) {
			t.Fatalf("series: %v", got)
		}
		if _, err := storetest.Exec(context.Background(), e.control, `DELETE FROM library_files WHERE relative_path = 'D/four.cbz'`); err != nil {
			t.Fatal(err)
		}
		e.scan()
		if got := e.rows(`SELECT name, file_count FROM series ORDER BY name_key`); !slices.Equal(got, []string{"batman|3", "Other|1"}) {
			t.Fatalf("series: %v", got)
		}
	})
}

// hashAll stores content hashes for every present row, as the hash job
// would (under a job of its own).
func (e *env) hashAll() {
	e.t.Helper()
	ctx := context.Background()
	fence := e.job("{}").Fence()
	for _, r := range e.rows(`SELECT id, relative_path, COALESCE(volumes, 0) FROM library_files
		WHERE is_missing = 0 AND role <> 'folder' ORDER BY id`) {
		f := strings.Split(r, "|")
		id, _ := strconv.ParseInt(f[0], 10, 64)
		rel := f[1]
		abs := filepath.Join(e.root, filepath.FromSlash(rel))
		st, err := statFile(abs, rel, "")
		if err != nil {
			e.t.Fatal(err)
		}
		var sum []byte
		if f[2] != "0" { // a multi-volume book: all its volumes, as the hash job reads them
			sum, st.SizeBytes, st.MtimeNS, err = hashing.Volumes(ctx, filepath.Dir(abs), filepath.Base(abs), protocol.HashBLAKE3)
		} else {
			sum, err = hashing.File(ctx, abs, protocol.HashBLAKE3)
		}
		if err != nil {
			e.t.Fatal(err)
		}
		h := scanning.FileHash{Algorithm: "blake3", Sum: sum, SizeBytes: st.SizeBytes, MtimeNS: st.MtimeNS}
		if err := scanning.New(e.worker).RecordHash(ctx, fence, id, h); err != nil {
			e.t.Fatal(err)
		}
	}
}

func TestMoveDetection(t *testing.T) {
	t.Parallel()
	t.Run("unique match keeps the row", func(t *testing.T) {
		e := setup(t)
		e.file("Old/a.cbz", cbz(t, ci("Series", "Alpha"), pages(2)...), t0)
		e.file("Old/b.cbz", cbz(t, ci("Series", "Beta"), pages(3)...), t0)
		e.scan()
		e.hashAll()
		id := e.one(`SELECT id || '|' || series_id FROM library_files WHERE relative_path = 'Old/a.cbz'`)
		if err := os.MkdirAll(filepath.Join(e.root, "New"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(e.root, "Old/a.cbz"), filepath.Join(e.root, "New/renamed.cbz")); err != nil {
			t.Fatal(err)
		}
		c := e.scan()
		if c.Moved != 1 || c.Added != 0 || c.Missing != 0 {
			t.Fatalf("counts %+v", c)
		}
		if got := e.one(`SELECT id || '|' || series_id FROM library_files WHERE relative_path = 'New/renamed.cbz'`); got != id {
			t.Fatalf("moved row %s, want %s", got, id)
		}
		if got := e.one(`SELECT count(*) FROM library_files`); got != "2" {
			t.Fatalf("rows: %s", got)
		}
		if got := e.one(`SELECT '' || is_missing || needs_hash || needs_analysis FROM library_files WHERE relative_path = 'New/renamed.cbz'`); got != "000" {
			t.Fatalf("flags: %s", got)
		}
	})
	t.Run("a moved file takes the series of its new place", func(t *testing.T) {
		e := setup(t)
		e.file("Berserk/Berserk 01.cbz", cbz(t, "", pages(2)...), t0)
		e.file("Berserk/Berserk 02.cbz", cbz(t, "", pages(3)...), t0)
		e.scan()
		e.hashAll()
		id := e.one(`SELECT id FROM library_files WHERE relative_path = 'Berserk/Berserk 02.cbz'`)
		if err := os.MkdirAll(filepath.Join(e.root, "Gantz"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(e.root, "Berserk/Berserk 02.cbz"), filepath.Join(e.root, "Gantz/Gantz 02.cbz")); err != nil {
			t.Fatal(err)
		}
		if c := e.scan(); c.Moved != 1 {
			t.Fatalf("counts %+v", c)
		}
		if got := e.one(`SELECT f.id || '|' || s.name FROM library_files f JOIN series s ON s.id = f.series_id
			WHERE f.relative_path = 'Gantz/Gantz 02.cbz'`); got != id+"|Gantz" {
			t.Fatalf("moved row %s, want id %s in series Gantz", got, id)
		}
	})
	t.Run("two matches make a new file", func(t *testing.T) {
		e := setup(t)
		data := cbz(t, ci("Series", "Twin"), pages(2)...)
		e.file("X/one.cbz", data, t0)
		e.file("Y/two.cbz", data, t0)
		e.scan()
		e.hashAll()
		os.Rename(filepath.Join(e.root, "X/one.cbz"), filepath.Join(e.root, "Z.cbz"))
		os.Remove(filepath.Join(e.root, "Y/two.cbz"))
		c := e.scan()
		if c.Moved != 0 || c.Added != 1 || c.Missing != 2 {
			t.Fatalf("counts %+v", c)
		}
		if got := e.one(`SELECT count(*) || '|' || sum(is_missing) FROM library_files`); got != "3|2" {
			t.Fatalf("rows: %s", got)
		}
		// The new file's hash was kept for the hash job.
		if got := e.one(`SELECT needs_hash || '|' || (CASE WHEN content_hash IS NOT NULL THEN 1 ELSE 0 END) FROM library_files WHERE relative_path = 'Z.cbz'`); got != "0|1" {
			t.Fatalf("hash: %s", got)
		}
	})
	t.Run("hash mode off never merges", func(t *testing.T) {
		e := setup(t)
		e.set(map[string]string{"scan.hash.mode": "off"})
		e.file("a.cbz", cbz(t, "", pages(2)...), t0)
		e.scan()
		e.hashAll()
		os.Rename(filepath.Join(e.root, "a.cbz"), filepath.Join(e.root, "b.cbz"))
		if c := e.scan(); c.Moved != 0 || c.Added != 1 || c.Missing != 1 {
			t.Fatalf("counts %+v", c)
		}
	})
}
