package scan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/protocol"
)

func (e *env) scanPaths(payload string) (map[string]int64, error) {
	e.t.Helper()
	e.clock.Advance(time.Second)
	return e.exec.Execute(context.Background(), e.job(payload), nil)
}

// A folder-scoped scan discovers, and marks missing, only under its
// folders; rows elsewhere are untouched even when their files are gone.
func TestFolderScopedScan(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("A/one.cbz", cbz(t, "", pages(2)...), t0)
	e.file("A b/two.cbz", cbz(t, "", pages(2)...), t0)
	e.file("B/three.cbz", cbz(t, "", pages(2)...), t0)
	e.scan()
	e.file("A/new.cbz", cbz(t, "", pages(1)...), t0)
	e.file("A b/new.cbz", cbz(t, "", pages(1)...), t0)
	for _, gone := range []string{"A/one.cbz", "B/three.cbz"} {
		if err := os.Remove(filepath.Join(e.root, gone)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.scanPaths(`{"paths":["A/"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if c := countsOf(res); c.Added != 1 || c.Missing != 1 || c.FilesSeen != 1 {
		t.Fatalf("scoped counts: %+v", c)
	}
	got := e.rows(`SELECT relative_path, is_missing FROM library_files ORDER BY relative_path`)
	want := []string{"A b/two.cbz|0", "A/new.cbz|0", "A/one.cbz|1", "B/three.cbz|0"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows after a scan of A/:\n%v\nwant\n%v", got, want)
	}
	// Two folders, one of them gone: its rows are missing, the other's new
	// file is found.
	if err := os.RemoveAll(filepath.Join(e.root, "B")); err != nil {
		t.Fatal(err)
	}
	res, err = e.scanPaths(`{"paths":["A b/","B/"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if c := countsOf(res); c.Added != 1 || c.Missing != 1 {
		t.Fatalf("second scoped counts: %+v", c)
	}
}

// A scoped scan of a library whose root is gone fails as library_missing
// and marks nothing missing; a payload with paths that are not normalized
// folders is invalid_payload.
func TestFolderScopedScanGuards(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("A/one.cbz", cbz(t, "", pages(2)...), t0)
	e.scan()
	for _, bad := range []string{`{"paths":["../x/"]}`, `{"paths":["A"]}`, `{"paths":["/A/"]}`, `{"paths":"A/"}`} {
		if _, err := e.scanPaths(bad); protocol.CodeOf(err, "") != protocol.ErrInvalidPayload {
			t.Errorf("payload %s: %v; want invalid_payload", bad, err)
		}
	}
	moved := e.root + ".away"
	if err := os.Rename(e.root, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Rename(moved, e.root) })
	if _, err := e.scanPaths(`{"paths":["A/"]}`); protocol.CodeOf(err, "") != protocol.ErrLibraryMissing {
		t.Fatalf("scan of an unmounted library: %v", err)
	}
	if n := e.one(`SELECT count(*) FROM library_files WHERE is_missing = 1`); n != "0" {
		t.Fatalf("%s rows missing after the root vanished", n)
	}
}

// A book moved into a scoped scan's folder from a folder outside it keeps
// its row (the watcher may request the two folders in two scans, the new
// one first): the old row's file is gone from disk and has the new file's
// size and hash, so it is marked missing in this scan and the move is
// recognised. A gone file outside the scope that matches nothing new is
// still left to the scan of its own folder.
func TestScopedScanSeesAMoveFromOutside(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("Old/a.cbz", cbz(t, ci("Series", "Alpha"), pages(2)...), t0)
	e.file("Old/b.cbz", cbz(t, ci("Series", "Beta"), pages(3)...), t0)
	e.file("Elsewhere/c.cbz", cbz(t, ci("Series", "Gamma"), pages(4)...), t0)
	e.scan()
	e.hashAll()
	id := e.one(`SELECT id FROM library_files WHERE relative_path = 'Old/a.cbz'`)
	must(t, os.MkdirAll(filepath.Join(e.root, "New"), 0o755))
	must(t, os.Rename(filepath.Join(e.root, "Old/a.cbz"), filepath.Join(e.root, "New/renamed.cbz")))
	must(t, os.Remove(filepath.Join(e.root, "Elsewhere/c.cbz")))
	res, err := e.scanPaths(`{"paths":["New/"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if c := countsOf(res); c.Moved != 1 || c.Added != 0 {
		t.Fatalf("counts %+v", c)
	}
	if got := e.one(`SELECT id FROM library_files WHERE relative_path = 'New/renamed.cbz'`); got != id {
		t.Fatalf("moved row %s, want %s", got, id)
	}
	got := e.rows(`SELECT relative_path, is_missing FROM library_files ORDER BY relative_path`)
	want := []string{"Elsewhere/c.cbz|0", "New/renamed.cbz|0", "Old/b.cbz|0"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows:\n%v\nwant\n%v", got, want)
	}
}
