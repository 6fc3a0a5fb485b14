package scan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// TestPurgeMissing: a missing file's row stays (and its series leaves the
// lists but keeps its place) until scan.missing.purge_after_days, then a
// scan deletes it once its covers are gone; a file back in time keeps its
// row; 0 keeps rows forever.
func TestPurgeMissing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("Saga/Saga 01.cbz", cbz(t, "", pages(2)...), t0)
	e.file("Saga/Saga 02.cbz", cbz(t, "", pages(3)...), t0)
	e.file("Alone/Alone 01.cbz", cbz(t, "", pages(1)...), t0)
	e.scan()
	gone := func(rel string) {
		t.Helper()
		if err := os.Remove(filepath.Join(e.root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	gone("Saga/Saga 02.cbz")
	gone("Alone/Alone 01.cbz")
	if c := e.scan(); c.Missing != 2 || c.Purged != 0 {
		t.Fatalf("first scan after the removal: %+v", c)
	}
	lists := func() string {
		t.Helper()
		var names []string
		series, err := catalog.New(e.control).ListSeries(context.Background(), new(int64(e.lib)), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range series {
			names = append(names, s.Name)
		}
		return strings.Join(names, ",")
	}
	if got := lists(); got != "Saga" {
		t.Fatalf("listed series %q: a series with no present file is not listed", got)
	}

	t.Run("kept within the delay, covers first", func(t *testing.T) {
		now := protocol.FormatTime(e.clock.Now())
		alone := e.one(`SELECT id FROM library_files WHERE relative_path = 'Alone/Alone 01.cbz'`)
		if _, err := storetest.Exec(context.Background(), e.control, `INSERT INTO thumbnails (file_id, library_id, group_key, status,
			output_relpath, created_at, updated_at) VALUES (?, ?, 'library:1', 'ready', 'covers/001/1.webp', ?, ?)`,
			alone, e.lib, now, now); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(29 * 24 * time.Hour)
		if c := e.scan(); c.Purged != 0 {
			t.Fatalf("purged within 30 days: %+v", c)
		}
		e.clock.Advance(2 * 24 * time.Hour)
		if c := e.scan(); c.Purged != 1 {
			t.Fatalf("after 31 days: %+v; want Saga 02 purged and Alone kept for its cover row", c)
		}
		if got := e.one(`SELECT ` + storetest.Concat("relative_path", ",", "relative_path") + ` FROM library_files`); got != "Saga/Saga 01.cbz,Alone/Alone 01.cbz" && got != "Alone/Alone 01.cbz,Saga/Saga 01.cbz" {
			t.Fatalf("rows %q", got)
		}
		if _, err := storetest.Exec(context.Background(), e.control, `DELETE FROM thumbnails`); err != nil {
			t.Fatal(err)
		}
		if c := e.scan(); c.Purged != 1 {
			t.Fatalf("after its covers were cleaned: %+v", c)
		}
		if got := e.one(`SELECT count(*) FROM series WHERE name = 'Alone'`); got != "0" {
			t.Fatal("a series with no rows left must be deleted")
		}
	})
	t.Run("0 keeps missing rows", func(t *testing.T) {
		e.set(map[string]string{"scan.missing.purge_after_days": "0"})
		gone("Saga/Saga 01.cbz")
		e.scan()
		e.clock.Advance(400 * 24 * time.Hour)
		if c := e.scan(); c.Purged != 0 || e.one(`SELECT count(*) FROM library_files`) != "1" {
			t.Fatalf("purge off: %+v", c)
		}
	})
}
