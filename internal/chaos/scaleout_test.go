package chaos

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/pgtest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// scaleOut is PostgreSQL and controld on this host and one workerd on each
// of three others (network namespaces), on one library folder.
type scaleOut struct {
	ctx   context.Context
	c     *cluster
	srv   *pgtest.Server
	hosts map[string]*netHost // slot → host
	db    *sql.DB             // the database, read as a monitoring tool
	root  string              // the library root
}

const workerRole = "workerd"

func setupScaleOut(t *testing.T) *scaleOut {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL, controld and three workerd on four hosts")
	}
	hosts, subnet := newNetHosts(t, 3)
	var gws []string
	for _, h := range hosts {
		gws = append(gws, h.gw)
	}
	srv, err := pgtest.StartWith(pgtest.Options{Listen: gws, Trust: []string{subnet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := t.Context()
	if err := srv.Exec(ctx, "postgres", "CREATE DATABASE bindery"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	s := &scaleOut{ctx: ctx, srv: srv, hosts: map[string]*netHost{}, root: filepath.Join(dir, "library")}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		t.Fatal(err)
	}
	s.c, err = newCluster("scaleout", dir, bin, s.root, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.usePostgres(ctx, srv.URL("bindery", pgtest.Superuser), srv.URL("bindery", workerRole)); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, s.c)
	if err := s.c.startControl(ctx); err != nil {
		t.Fatal(err)
	}
	for i, h := range hosts {
		slot := fmt.Sprintf("h%d", i+1)
		s.hosts[slot] = h
		s.c.netns[slot] = h.ns
		// connect_timeout: a host cut off must not wait out TCP's own
		// minutes before it tries again.
		s.c.workerDB[slot] = srv.URLAt(h.gw, "bindery", workerRole) + "&connect_timeout=5"
		if _, err := s.c.startWorker(slot); err != nil {
			t.Fatal(err)
		}
	}
	if s.db, err = checks.OpenRO(s.c.db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.db.Close() })
	return s
}

// expected is what a clean run of a library ends with.
type expected struct {
	covers int // ready covers
	pairs  int // pairs of files with equal content
}

// library generates a library of n books (two broken) and a copy of the
// first, registers it and requests its scan. It returns the library id and
// what a complete run ends with.
func (s *scaleOut) library(t *testing.T, name string, n int) (id int64, want expected) {
	t.Helper()
	dir := filepath.Join(s.root, name)
	m, err := fixtures.Library(dir, fixtures.LibrarySpec{Files: n, Broken: 2, Page: fixtures.PageOptions{W: 600, H: 900}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.CopyFile(filepath.Join(dir, filepath.FromSlash(m.Files[0].Path)), filepath.Join(dir, "copy.cbz")); err != nil {
		t.Fatal(err)
	}
	want.covers = 1 // the copy
	for _, f := range m.Files {
		if f.ErrorCode == "" {
			want.covers++
		}
	}
	want.pairs = equalPairs(t, dir)
	if id, err = s.c.setup(s.ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.c.requestScan(s.ctx, id); err != nil {
		t.Fatal(err)
	}
	return id, want
}

// equalPairs counts the pairs of files under dir with equal bytes: the
// duplicate pairs a complete hash run finds (generated books of a kind can
// come out byte for byte alike, besides the copy).
func equalPairs(t *testing.T, dir string) int {
	t.Helper()
	count := map[[32]byte]int{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		count[sha256.Sum256(data)]++
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for _, n := range count {
		pairs += n * (n - 1) / 2
	}
	return pairs
}

// waitDone waits until the library's pipeline ran to its end, as a clean
// run ends: its last scan completed, every file hashed, every cover
// rendered, the duplicates found, nothing left to do in any lease table,
// and no row of any library failed (a lost host or database is no fault of
// the work: it must run again, not end failed).
func (s *scaleOut) waitDone(t *testing.T, lib int64, want expected) {
	t.Helper()
	testutil.WaitForState(t, "the library's scan, hash and covers done", 3*time.Minute, func() (bool, string) {
		var scan sql.NullString
		var ready, unhashed, dupes, active, failed int
		err := s.db.QueryRowContext(s.ctx, `SELECT
			(SELECT status FROM jobs WHERE kind = 'scan' AND library_id = ?1 ORDER BY id DESC LIMIT 1),
			(SELECT count(*) FROM thumbnails t JOIN library_files f ON f.id = t.file_id
				WHERE f.library_id = ?1 AND t.status = 'ready'),
			(SELECT count(*) FROM library_files WHERE library_id = ?1 AND is_missing = 0 AND needs_hash = 1),
			(SELECT count(*) FROM library_files a JOIN library_files b ON a.content_hash = b.content_hash AND a.id < b.id
				WHERE a.library_id = ?1 AND b.library_id = ?1),
			(SELECT count(*) FROM jobs WHERE status IN ('pending','running','retryable'))
				+ (SELECT count(*) FROM scan_requests)
				+ (SELECT count(*) FROM thumbnails WHERE status IN ('pending','running')),
			(SELECT count(*) FROM jobs WHERE status = 'failed')
				+ (SELECT count(*) FROM thumbnails WHERE status = 'failed')`, lib).Scan(
			&scan, &ready, &unhashed, &dupes, &active, &failed)
		state := fmt.Sprintf("scan %s, covers %d/%d, unhashed %d, duplicate pairs %d/%d, active rows %d, failed rows %d (err %v)",
			scan.String, ready, want.covers, unhashed, dupes, want.pairs, active, failed, err)
		if failed > 0 {
			t.Fatalf("work failed instead of running again: %s", state)
		}
		return err == nil && scan.String == "completed" && ready == want.covers && unhashed == 0 && dupes == want.pairs &&
			active == 0, state
	})
}

// workersOf lists the distinct workers that rendered the library's covers.
func (s *scaleOut) workersOf(t *testing.T, lib int64) []string {
	t.Helper()
	rows, err := s.db.QueryContext(s.ctx, `SELECT DISTINCT t.worker_id FROM thumbnails t
		JOIN library_files f ON f.id = t.file_id WHERE f.library_id = ? AND t.status = 'ready' ORDER BY 1`, lib)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// firstReport is the time of the first log line that holds one of msgs.
func firstReport(log string, msgs ...string) time.Time {
	for _, line := range strings.Split(log, "\n") {
		for _, m := range msgs {
			if !strings.Contains(line, m) {
				continue
			}
			f, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, f); err == nil {
				return at
			}
		}
	}
	return time.Time{}
}

// heldRow is a lease row and its holder.
type heldRow struct {
	table  string
	id     int64
	worker string
}

// runningRows lists the running rows of jobs and thumbnails.
func (s *scaleOut) runningRows(t *testing.T) []heldRow {
	t.Helper()
	rows, err := s.db.QueryContext(s.ctx, `SELECT 'jobs', id, worker_id FROM jobs WHERE status = 'running'
		UNION ALL SELECT 'thumbnails', id, worker_id FROM thumbnails WHERE status = 'running'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []heldRow
	for rows.Next() {
		var r heldRow
		if err := rows.Scan(&r.table, &r.id, &r.worker); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// waitRunning waits until a worker holds a row, and returns one.
func (s *scaleOut) waitRunning(t *testing.T) heldRow {
	t.Helper()
	var held heldRow
	testutil.WaitForState(t, "a worker holds a row", time.Minute, func() (bool, string) {
		rows := s.runningRows(t)
		if len(rows) > 0 {
			held = rows[0]
		}
		return len(rows) > 0, "nothing running"
	})
	return held
}

func (s *scaleOut) slotOf(workerID string) string {
	for slot, d := range s.c.workers {
		if d.name == workerID {
			return slot
		}
	}
	return ""
}

// TestScaleOutAcrossHosts runs the protocol on PostgreSQL with controld on
// one host and workerd on three others (issue 22): a library's scan, hash
// and covers spread over every host; one host cut off mid-job, whose rows
// another host finishes, and which works again once its link is back;
// controld restarted; PostgreSQL restarted under load, after which the
// daemons reconnect and no job is lost. Each library ends as a clean run
// ends.
func TestScaleOutAcrossHosts(t *testing.T) {
	s := setupScaleOut(t)

	t.Run("work spreads over every host", func(t *testing.T) {
		lib, want := s.library(t, "spread", 60)
		s.waitDone(t, lib, want)
		if got := s.workersOf(t, lib); len(got) != len(s.hosts) {
			t.Fatalf("covers rendered by %v, want all %d hosts", got, len(s.hosts))
		}
	})

	t.Run("a host cut off mid-job", func(t *testing.T) {
		lib, want := s.library(t, "cut", 30)
		victim := s.waitRunning(t)
		slot := s.slotOf(victim.worker)
		if slot == "" {
			t.Fatalf("running row %+v is held by no worker of ours", victim)
		}
		h := s.hosts[slot]
		h.cut(t)
		cutAt := time.Now()
		var held []heldRow
		for _, r := range s.runningRows(t) {
			if r.worker == victim.worker {
				held = append(held, r)
			}
		}
		s.waitDone(t, lib, want)
		for _, r := range held {
			var status, worker sql.NullString
			if err := s.db.QueryRowContext(s.ctx, `SELECT status, worker_id FROM `+r.table+` WHERE id = ?`, r.id).Scan(&status, &worker); err != nil {
				t.Fatal(err)
			}
			if worker.String == victim.worker || (status.String != "completed" && status.String != "ready" && status.String != "failed") {
				t.Errorf("%s %d held by the cut-off host: now %s by %q, want finished by another host", r.table, r.id, status.String, worker.String)
			}
		}
		h.restore(t)
		d := s.c.worker(slot)
		testutil.WaitForState(t, "the cut-off worker heartbeats again", time.Minute, func() (bool, string) {
			var seen time.Time
			err := s.db.QueryRowContext(s.ctx, `SELECT last_seen_at FROM workers WHERE worker_id = ?`, d.name).Scan(&seen)
			return err == nil && seen.After(cutAt), fmt.Sprintf("last seen %v (err %v), cut at %v", seen, err, cutAt)
		})
		if !d.alive() {
			t.Fatalf("%s exited after its link came back: %v", d.name, d.exitErr())
		}
		// Cut off, it must stop its work on its own clock, one lease after
		// its last heartbeat, not when its stalled statements give up.
		var lostAt time.Time
		testutil.WaitForState(t, d.name+" reports losing its lease", time.Minute, func() (bool, string) {
			lostAt = firstReport(d.logText(), "no heartbeat succeeded", "lease lost", "result dropped", "could not write result")
			return !lostAt.IsZero(), d.tail(30)
		})
		if after := lostAt.Sub(cutAt); after > 2*s.c.lease {
			t.Errorf("%s stopped its work %v after its link went down, lease %v:\n%s", d.name, after, s.c.lease, d.tail(30))
		}
		t.Logf("%s cut off holding %d row(s) (%v), stopped them %v later; all finished by the other hosts", d.name, len(held), held, lostAt.Sub(cutAt).Round(time.Millisecond))
	})

	t.Run("controld restarted", func(t *testing.T) {
		lib, want := s.library(t, "controld-restart", 30)
		s.waitRunning(t)
		if err := s.c.control().terminate(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.c.startControl(s.ctx); err != nil {
			t.Fatal(err)
		}
		s.waitDone(t, lib, want)
	})

	t.Run("postgres restarted under load", func(t *testing.T) {
		lib, want := s.library(t, "pg-restart", 30)
		s.waitRunning(t)
		if err := s.srv.Restart(); err != nil {
			t.Fatal(err)
		}
		s.waitDone(t, lib, want)
		for slot, d := range s.c.workers {
			if !d.alive() {
				t.Errorf("worker %s exited after the restart: %v", slot, d.exitErr())
			}
		}
		if !s.c.control().alive() {
			t.Errorf("controld exited after the restart: %v", s.c.control().exitErr())
		}
	})

	t.Run("a link blip", func(t *testing.T) {
		lib, want := s.library(t, "blip", 30)
		victim := s.waitRunning(t)
		slot := s.slotOf(victim.worker)
		if slot == "" {
			t.Fatalf("running row %+v is held by no worker of ours", victim)
		}
		// Shorter than the lease (3 s) and than PostgreSQL's idle
		// transaction timeout: nothing is lost, nothing counts as a crash.
		s.hosts[slot].cut(t)
		time.Sleep(time.Second)
		s.hosts[slot].restore(t)
		s.waitDone(t, lib, want)
		s.noCrashCounted(t, lib)
		if d := s.c.worker(slot); !d.alive() {
			t.Fatalf("%s exited after a link blip: %v", d.name, d.exitErr())
		}
	})

	t.Run("postgres restarted three times in a cover's life", func(t *testing.T) {
		lib, want := s.library(t, "pg-restart-3", 40)
		for i := range 3 {
			s.waitCoverRunning(t)
			if err := s.srv.Restart(); err != nil {
				t.Fatalf("restart %d: %v", i+1, err)
			}
		}
		// Every cover still renders: outages are not crashes, so no row
		// reaches render_crashed however often its worker lost the
		// database (waitDone fails on any failed row).
		s.waitDone(t, lib, want)
		s.noCrashCounted(t, lib)
	})

	if err := s.c.stopAll(); err != nil {
		t.Fatal(err)
	}
}

// waitCoverRunning waits until a worker renders a cover.
func (s *scaleOut) waitCoverRunning(t *testing.T) {
	t.Helper()
	testutil.WaitForState(t, "a worker renders a cover", time.Minute, func() (bool, string) {
		// The monitor's connections die with each restart: ask again.
		var n int
		err := s.db.QueryRowContext(s.ctx, `SELECT count(*) FROM thumbnails WHERE status = 'running'`).Scan(&n)
		return err == nil && n > 0, fmt.Sprintf("%d covers running (err %v)", n, err)
	})
}

// noCrashCounted: no cover of the library counts a crash (every worker
// stayed alive throughout, so every recovery was an outage's).
func (s *scaleOut) noCrashCounted(t *testing.T, lib int64) {
	t.Helper()
	var covers int
	err := s.db.QueryRowContext(s.ctx, `SELECT count(*) FROM thumbnails t JOIN library_files f ON f.id = t.file_id
		WHERE f.library_id = ? AND t.recovered_count > 0`, lib).Scan(&covers)
	if err != nil {
		t.Fatal(err)
	}
	if covers > 0 {
		t.Fatalf("an outage counted as a crash on %d covers", covers)
	}
}

// killOnCleanup kills the cluster's processes when t ends, logging the
// tail of each one's log first if t failed.
func killOnCleanup(t *testing.T, c *cluster) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, d := range c.workers {
				t.Logf("%s:\n%s", d.name, d.tail(30))
			}
			if d := c.control(); d != nil {
				t.Logf("%s:\n%s", d.name, d.tail(30))
			}
		}
		c.killAll()
	})
}
