package scan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// killCtx is a context that cancels itself on the n-th time anyone asks
// whether it is done: every ctx check of the scanner (and of database/sql
// inside a transaction) is a possible kill point.
type killCtx struct {
	context.Context
	calls  atomic.Int64
	at     int64
	cancel context.CancelFunc
}

func newKillCtx(at int64) *killCtx {
	ctx, cancel := context.WithCancel(context.Background())
	return &killCtx{Context: ctx, at: at, cancel: cancel}
}

func (k *killCtx) Err() error {
	if k.calls.Add(1) >= k.at {
		k.cancel()
	}
	return k.Context.Err()
}

// resumeLibrary builds a library, scans it, hashes it, then changes it:
// moves, deletions, additions, changes, a corrupt file and case variants of
// one series, so that every phase has work on the next scan.
func resumeLibrary(t *testing.T) *env {
	e := setup(t)
	for i := range 12 {
		e.file(fmt.Sprintf("Keep %d/issue %02d.cbz", i%3, i), cbz(t, "", pages(i%4+1)...), t0)
	}
	for i := range 6 {
		e.file(fmt.Sprintf("Move/m%d.cbz", i), cbz(t, ci("Series", "Movers", "Number", fmt.Sprint(i)), pages(i+1)...), t0)
	}
	e.file("Gone/g1.cbz", cbz(t, "", pages(2)...), t0)
	e.file("Gone/g2.cbz", cbz(t, "", pages(3)...), t0)
	e.scan()
	e.hashAll()
	for i := range 3 {
		must(t, os.MkdirAll(filepath.Join(e.root, "Moved"), 0o755))
		must(t, os.Rename(filepath.Join(e.root, fmt.Sprintf("Move/m%d.cbz", i)), filepath.Join(e.root, fmt.Sprintf("Moved/n%d.cbz", i))))
	}
	must(t, os.RemoveAll(filepath.Join(e.root, "Gone")))
	for i := range 15 {
		series := []string{"new wave", "New Wave", "NEW WAVE", "Other"}[i%4]
		e.file(fmt.Sprintf("Add/%c/a%02d.cbz", 'a'+i%5, i), cbz(t, ci("Series", series, "Year", fmt.Sprint(2000+i)), pages(i%5+1)...), t0)
	}
	e.file("Keep 0/issue 00.cbz", cbz(t, "", pages(9)...), t0.Add(time.Hour))
	e.file("Keep 1/issue 01.cbz", cbz(t, ci("Series", "Renamed"), pages(2)...), t0.Add(time.Hour))
	e.file("Add/broken.cbz", []byte("PK\x03\x04 this is not a zip"), t0)
	return e
}

func TestKillAndResume(t *testing.T) {
	t.Parallel()
	ref := resumeLibrary(t)
	c := ref.scan()
	if c.Moved != 3 || c.Missing != 2 || c.Added != 16 || c.Changed != 2 || c.ErrorCount != 1 {
		t.Fatalf("reference counts: %+v", c)
	}
	if got := ref.one(`SELECT count(*) FROM series WHERE name_key = 'new wave'`); got != "1" {
		t.Fatalf("case variants made %s series", got)
	}
	want := ref.dump()

	// Count the ctx checks of a full scan, then kill at points spread over it.
	probe := resumeLibrary(t)
	k := newKillCtx(1 << 62)
	probe.clock.Advance(time.Second)
	if _, err := probe.exec.Execute(k, probe.job("{}"), nil); err != nil {
		t.Fatal(err)
	}
	if got := probe.dump(); got != want {
		t.Fatalf("probe scan differs from reference:\n%s\nwant\n%s", got, want)
	}
	total := k.calls.Load()
	points := 12
	if testing.Short() {
		points = 4
	}
	for i := 1; i <= points; i++ {
		at := total * int64(i) / int64(points+1)
		t.Run(fmt.Sprintf("kill at check %d of %d", at, total), func(t *testing.T) {
			e := resumeLibrary(t)
			k := newKillCtx(at)
			e.clock.Advance(time.Second)
			_, err := e.exec.Execute(k, e.job("{}"), nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("killed scan returned %v", err)
			}
			if got := e.one(`SELECT status || '|' || error_code FROM scan_sessions ORDER BY id DESC LIMIT 1`); got != "failed|cancelled" {
				t.Fatalf("session: %s", got)
			}
			e.scan()
			if got := e.dump(); got != want {
				t.Fatalf("resumed scan differs:\n%s\nwant\n%s", got, want)
			}
			// And a third scan changes nothing more.
			if c := e.scan(); c.Added+c.Changed+c.Missing+c.Restored+c.Moved+c.SeriesCreated != 0 {
				t.Fatalf("third scan: %+v", c)
			}
		})
	}
}
