package scan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// recorder is an engine.Reporter that keeps every report.
type recorder struct {
	mu      sync.Mutex
	reports [][2]int64
	onCall  func(n int)
}

func (r *recorder) Progress(processed, total int64) {
	r.mu.Lock()
	r.reports = append(r.reports, [2]int64{processed, total})
	n := len(r.reports)
	r.mu.Unlock()
	if r.onCall != nil {
		r.onCall(n)
	}
}

func TestExecutorErrors(t *testing.T) {
	t.Parallel()
	t.Run("bad payload", func(t *testing.T) {
		e := setup(t)
		_, err := e.exec.Execute(context.Background(), e.job(`{"nope":1}`), nil)
		if protocol.CodeOf(err, "") != protocol.ErrInvalidPayload {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("library folder gone", func(t *testing.T) {
		e := setup(t)
		e.file("a.cbz", cbz(t, "", pages(1)...), t0)
		e.scan()
		must(t, os.RemoveAll(e.root))
		_, err := e.exec.Execute(context.Background(), e.job("{}"), nil)
		if protocol.CodeOf(err, "") != protocol.ErrLibraryMissing {
			t.Fatalf("err %v", err)
		}
		// An unmounted library must not mark every file missing.
		if got := e.one(`SELECT is_missing FROM library_files`); got != "0" {
			t.Fatalf("is_missing %s", got)
		}
	})
	t.Run("library outside the root", func(t *testing.T) {
		e := setup(t)
		exec := New(e.worker, Config{LibraryRoots: pathsafe.Roots{t.TempDir()}})
		_, err := exec.Execute(context.Background(), e.job("{}"), nil)
		if protocol.CodeOf(err, "") != protocol.ErrPathViolation {
			t.Fatalf("err %v", err)
		}
		inside := New(e.worker, Config{LibraryRoots: pathsafe.Roots{filepath.Dir(e.root)}})
		if _, err := inside.Execute(context.Background(), e.job("{}"), nil); err != nil {
			t.Fatalf("library inside the root: %v", err)
		}
	})
	t.Run("abandoned session closed", func(t *testing.T) {
		e := setup(t)
		if _, err := scanning.New(e.worker).StartScanSession(context.Background(), e.job("{}").Fence(), e.lib); err != nil {
			t.Fatal(err)
		}
		e.scan()
		got := e.rows(`SELECT status, COALESCE(error_code, '') FROM scan_sessions ORDER BY id`)
		if fmt.Sprint(got) != "[failed|lease_expired succeeded|]" {
			t.Fatalf("sessions %v", got)
		}
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i := range 40 {
		e.file(fmt.Sprintf("S/%02d.cbz", i), cbz(t, "", pages(2)...), t0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{onCall: func(n int) {
		if n == 3 {
			cancel()
		}
	}}
	res, err := e.exec.Execute(ctx, e.job("{}"), rec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// Finished batches are kept and the session says what happened.
	if got := e.one(`SELECT status || '|' || error_code FROM scan_sessions`); got != "failed|cancelled" {
		t.Fatalf("session %s", got)
	}
	if n := e.one(`SELECT count(*) FROM library_files`); n == "0" || res["files_seen"] == 0 {
		t.Fatalf("no finished batch kept: rows %s, result %v", n, res)
	}
	c := e.scan()
	if got := e.one(`SELECT count(*) || '|' || sum(needs_analysis) FROM library_files`); got != "40|0" {
		t.Fatalf("after resume %s (%+v)", got, c)
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i := range 30 {
		e.file(fmt.Sprintf("S/%02d.cbz", i), cbz(t, "", pages(1)...), t0)
	}
	rec := &recorder{}
	if _, err := e.exec.Execute(context.Background(), e.job("{}"), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.reports) < 4 {
		t.Fatalf("few reports: %v", rec.reports)
	}
	for i, r := range rec.reports {
		if r[0] > r[1] || (i > 0 && r[0] < rec.reports[i-1][0]) {
			t.Fatalf("bad progress sequence %v", rec.reports)
		}
	}
	if last := rec.reports[len(rec.reports)-1]; last[0] != last[1] || last[0] != 60 {
		t.Fatalf("last report %v, want 60/60 (30 seen + 30 analysed)", last)
	}
}

func TestCoversAndForce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("A/1.cbz", cbz(t, "", pages(2)...), t0)
	e.file("A/2.cbz", cbz(t, "", pages(2)...), t0)
	e.set(map[string]string{"scan.cover.mode": "off"})
	e.scan()
	if got := e.one(`SELECT sum(needs_cover) FROM library_files`); got != "0" {
		t.Fatalf("cover mode off marked %s", got)
	}
	e.set(map[string]string{"scan.cover.mode": "scan"})
	e.scan()
	if got := e.one(`SELECT sum(needs_cover) FROM library_files`); got != "0" {
		t.Fatalf("unchanged files marked %s", got)
	}
	e.set(map[string]string{"scan.cover.regenerate_missing": "1"})
	if _, err := storetest.Exec(context.Background(), e.control, `UPDATE library_files SET cover_updated_at = 1 WHERE relative_path = 'A/1.cbz'`); err != nil {
		t.Fatal(err)
	}
	e.scan()
	if got := e.rows(`SELECT relative_path FROM library_files WHERE needs_cover = 1`); fmt.Sprint(got) != "[A/2.cbz]" {
		t.Fatalf("regenerate_missing marked %v", got)
	}

	t.Run("force re-analyses unchanged files", func(t *testing.T) {
		before := e.rows(`SELECT id, analyzed_at FROM library_files ORDER BY id`)
		e.clock.Advance(time.Minute)
		res, err := e.exec.Execute(context.Background(), e.job(`{"force":true}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res["unchanged"] != 2 {
			t.Fatalf("result %v", res)
		}
		after := e.rows(`SELECT id, analyzed_at FROM library_files ORDER BY id`)
		if fmt.Sprint(before) == fmt.Sprint(after) {
			t.Fatalf("force did not re-analyse: %v", after)
		}
		if got := e.one(`SELECT count(DISTINCT series_id) || '|' || sum(CASE WHEN series_id IS NULL THEN 1 ELSE 0 END) FROM library_files`); got != "1|0" {
			t.Fatalf("links after force %s", got)
		}
	})
}

// TestRetryIOError: a file whose last analysis hit io_error (a passing
// condition, unlike a corrupt or encrypted archive) is analysed again by the
// next scan even though it did not change.
func TestRetryIOError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("a.cbz", cbz(t, "", pages(2)...), t0)
	e.file("bad.cbz", []byte("garbage"), t0)
	e.scan()
	if _, err := storetest.Exec(context.Background(), e.control, `UPDATE library_files SET analysis_error_code = 'io_error',
		total_pages = NULL WHERE relative_path = 'a.cbz'`); err != nil {
		t.Fatal(err)
	}
	e.scan()
	got := e.rows(`SELECT relative_path, total_pages, COALESCE(analysis_error_code, '') FROM library_files ORDER BY relative_path`)
	if fmt.Sprint(got) != "[a.cbz|2| bad.cbz|NULL|archive_corrupt]" {
		t.Fatalf("files %v", got)
	}
	if n := e.one(`SELECT count(*) FROM scan_errors WHERE relative_path = 'bad.cbz'`); n != "1" {
		t.Fatalf("a corrupt unchanged file was analysed again (%s errors)", n)
	}
}

// TestBadComicInfo: a hostile or broken ComicInfo.xml is ignored with a
// scan error; the file keeps its pages and a folder-derived series.
func TestBadComicInfo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	doctype := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><ComicInfo><Series>&lol;</Series></ComicInfo>`
	e.file("Hostile (2001)/a.cbz", cbz(t, doctype, pages(2)...), t0)
	c := e.scan()
	if c.ErrorCount != 1 {
		t.Fatalf("counts %+v", c)
	}
	got := e.one(`SELECT f.total_pages || '|' || f.series_name_raw || '|' || COALESCE(f.analysis_error_code, '') || '|' ||
		m.source || '|' || m.year FROM library_files f JOIN file_metadata m ON m.file_id = f.id`)
	if got != "2|Hostile||folder|2001" {
		t.Fatalf("file %s", got)
	}
	if got := e.one(`SELECT error_code FROM scan_errors`); got != protocol.ErrArchiveCorrupt {
		t.Fatalf("error %s", got)
	}
}
