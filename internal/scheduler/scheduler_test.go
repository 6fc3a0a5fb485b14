package scheduler

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

type env struct {
	ctx     context.Context
	path    string
	control *store.Store
	worker  *store.Store
	libs    []int64
}

func setup(t *testing.T, libraries int) *env {
	t.Helper()
	path := storetest.MustMigrate(t)
	e := &env{ctx: context.Background(), path: path,
		control: storetest.MustOpen(t, path, store.RoleControl, nil),
		worker:  storetest.MustOpen(t, path, store.RoleWorker, nil)}
	for range libraries {
		e.libs = append(e.libs, testfactory.Library(t, e.control, &testfactory.LibraryOpts{CreatedAt: e.control.Now()}))
	}
	return e
}

// fastConfig ticks every service quickly; slow is for services a test
// does not exercise.
func fastConfig(reg prometheus.Registerer) Config {
	return Config{
		Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DispatchInterval: 20 * time.Millisecond, FollowUpInterval: 20 * time.Millisecond,
		ScheduleInterval: 50 * time.Millisecond, RetryInterval: 50 * time.Millisecond,
		RetentionInterval: time.Hour, WALInterval: time.Hour, CleanupInterval: time.Hour,
		Lease: 200 * time.Millisecond,
	}
}

func (e *env) start(t *testing.T, cfg Config) *Scheduler {
	t.Helper()
	s := New(e.control, cfg)
	if err := s.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func (e *env) request(t *testing.T, kind protocol.JobKind, lib int64, p protocol.Priority) queue.RequestOutcome {
	t.Helper()
	out, err := queue.New(e.control).RequestJob(e.ctx, queue.JobRequest{Kind: kind, LibraryID: new(int64(lib)), Priority: p})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// A deadline for a condition, not a timing assertion: make test runs
	// this package under -race beside the container tests and chaos.
	testutil.WaitFor(t, what, 30*time.Second, cond)
}

// work acts as workerd: claims the next scan/hash job, checks it is the
// only active one, finishes it, and returns it.
func (e *env) work(t *testing.T) *model.Job {
	t.Helper()
	var job *model.Job
	waitFor(t, "a claimable job", func() bool {
		j, err := leases.New(e.worker).ClaimJob(e.ctx, "w1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		job = j
		return j != nil
	})
	if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM jobs WHERE status IN ('pending','running') AND kind IN ('scan','hash')`); n != 1 {
		t.Fatalf("%d active scan/hash jobs", n)
	}
	if err := leases.New(e.worker).FinishJob(e.ctx, job.Fence(), leases.JobOutcome{Status: protocol.JobCompleted, Result: "{}"}); err != nil {
		t.Fatal(err)
	}
	return job
}

func TestDispatcher(t *testing.T) {
	t.Parallel()
	t.Run("three libraries requested at once run one after another", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 3)
		if err := e.control.PutSettings(e.ctx, map[string]string{"scan.hash.mode": "off"}); err != nil {
			t.Fatal(err)
		}
		for _, l := range e.libs {
			e.request(t, protocol.JobKindScan, l, protocol.PriorityHigh)
		}
		e.start(t, fastConfig(nil))
		var order []int64
		for range 3 {
			order = append(order, e.work(t).Library())
		}
		if fmt.Sprint(order) != fmt.Sprint(e.libs) {
			t.Fatalf("order %v, want %v", order, e.libs)
		}
		if q, _ := queue.New(e.control).ListQueue(e.ctx); len(q) != 0 {
			t.Fatalf("queue left %+v", q)
		}
	})
	t.Run("high before normal and restart in the middle", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 4)
		if err := e.control.PutSettings(e.ctx, map[string]string{"scan.hash.mode": "off"}); err != nil {
			t.Fatal(err)
		}
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal) // takes the slot
		e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityNormal)
		e.request(t, protocol.JobKindScan, e.libs[2], protocol.PriorityNormal)
		e.request(t, protocol.JobKindScan, e.libs[3], protocol.PriorityHigh)
		reg := prometheus.NewRegistry()
		s1 := e.start(t, fastConfig(reg))
		first := e.work(t)
		waitFor(t, "high entry promoted", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM jobs WHERE status = 'pending'`)
			return n == 1
		})
		s1.Stop()
		second := e.work(t)
		// controld is down: the slot is free but nobody promotes
		if first.Library() != e.libs[0] || second.Library() != e.libs[3] {
			t.Fatalf("ran %d then %d", first.Library(), second.Library())
		}
		if j, _ := leases.New(e.worker).ClaimJob(e.ctx, "w1", time.Minute); j != nil {
			t.Fatalf("job %d promoted while the scheduler was stopped", j.ID)
		}
		// a new controld (new store handle, same registry) continues
		control2 := storetest.MustOpen(t, e.path, store.RoleControl, nil)
		s2 := New(control2, fastConfig(reg))
		if err := s2.Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		defer s2.Stop()
		third, fourth := e.work(t), e.work(t)
		if third.Library() != e.libs[1] || fourth.Library() != e.libs[2] {
			t.Fatalf("after restart ran %d then %d", third.Library(), fourth.Library())
		}
		// The tick counts its promotions after their commit, so a worker
		// may claim the last one before the metric moves.
		waitFor(t, "3 promotions in the dispatch items metric", func() bool {
			return counterValue(s2.metrics.items.WithLabelValues("dispatch")) == 3
		})
		if got := counterValue(s2.metrics.items.WithLabelValues("dispatch")); got != 3 {
			t.Fatalf("dispatch items metric %v, want 3 promotions", got)
		}
	})
	t.Run("kick promotes without waiting for the poll", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 2)
		cfg := fastConfig(nil)
		cfg.DispatchInterval = time.Hour
		first := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh)
		e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityHigh)
		s := e.start(t, cfg)
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE jobs SET status = 'cancelled' WHERE id = ?`, first.Job.ID); err != nil {
			t.Fatal(err)
		}
		s.Kick()
		waitFor(t, "promotion after kick", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM jobs WHERE status = 'pending' AND library_id = ?`, e.libs[1])
			return n == 1
		})
	})
}

// recordingCovers is a CoverAdmitter that records its calls and clears
// the flags it admits, as the covers store does.
type recordingCovers struct {
	st    *store.Store
	mu    sync.Mutex
	calls []int64
}

func (r *recordingCovers) AdmitPendingCovers(ctx context.Context, lib int64, limit int, capacity, shards int64, f protocol.ImageFormat) (int64, error) {
	r.mu.Lock()
	r.calls = append(r.calls, lib)
	r.mu.Unlock()
	if capacity != 10000 || shards != 256 || f != protocol.ImageWebP {
		return 0, fmt.Errorf("settings not passed: %d %d %s", capacity, shards, f)
	}
	res, err := storetest.Exec(ctx, r.st, `UPDATE library_files SET needs_cover = 0 WHERE id IN
		(SELECT id FROM library_files WHERE library_id = ? AND needs_cover = 1 LIMIT ?)`, lib, limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func TestFollowUps(t *testing.T) {
	t.Parallel()
	t.Run("a completed scan queues one hash job and its covers are admitted", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 2)
		now := protocol.FormatTime(e.control.Now())
		for i := range 7 {
			if _, err := storetest.Exec(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
				needs_cover, created_at, updated_at) VALUES (?, ?, 1, 1, 1, ?, ?)`, e.libs[0], fmt.Sprint(i, ".cbz"), now, now); err != nil {
				t.Fatal(err)
			}
		}
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh)
		covers := &recordingCovers{st: e.control}
		cfg := fastConfig(nil)
		cfg.CoverBatch = 3
		s := New(e.control, cfg).WithCovers(covers)
		if err := s.Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		scan := e.work(t)
		hash := e.work(t)
		if hash.Kind != "hash" || hash.Library() != e.libs[0] || hash.Priority != "normal" {
			t.Fatalf("after scan %d ran %+v", scan.ID, hash)
		}
		waitFor(t, "covers admitted", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM library_files WHERE needs_cover = 1`)
			return n == 0
		})
		// the hash job is not followed by anything, and the scan only once
		time.Sleep(100 * time.Millisecond)
		if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM jobs WHERE kind = 'hash'`); n != 1 {
			t.Fatalf("%d hash jobs", n)
		}
		covers.mu.Lock()
		defer covers.mu.Unlock()
		for _, l := range covers.calls {
			if l != e.libs[0] {
				t.Fatalf("admitted for library %d without flagged files", l)
			}
		}
	})
	t.Run("the store's own admission turns flags into thumbnail rows", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 1)
		now := protocol.FormatTime(e.control.Now())
		for i := range 5 {
			if _, err := storetest.Exec(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
				needs_cover, is_missing, created_at, updated_at) VALUES (?, ?, 1, 1, 1, ?, ?, ?)`,
				e.libs[0], fmt.Sprint(i, ".cbz"), i/4, now, now); err != nil {
				t.Fatal(err)
			}
		}
		s := e.start(t, fastConfig(nil))
		if s.covers != CoverAdmitter(s.th) {
			t.Fatal("New does not admit covers through its store")
		}
		waitFor(t, "thumbnail rows", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM thumbnails WHERE status = 'pending' AND library_id = ?`, e.libs[0])
			return n == 4
		})
		if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM library_files WHERE needs_cover = 1 AND is_missing = 0`); n != 0 {
			t.Fatalf("%d present files still flagged", n)
		}
	})
	t.Run("covers rendered before cover hashes get hash rows", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 1)
		now := protocol.FormatTime(e.control.Now())
		for i := range 3 {
			id, err := storetest.InsertID(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
				created_at, updated_at) VALUES (?, ?, 1, 1, ?, ?) RETURNING id`, e.libs[0], fmt.Sprint(i, ".cbz"), now, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := storetest.Exec(e.ctx, e.control, `INSERT INTO thumbnails (file_id, library_id, group_key, status, format,
				output_relpath, created_at, updated_at) VALUES (?, ?, ?, 'ready', 'webp', ?, ?, ?)`,
				// In the current layout: a cover in another is flagged for a
				// new render (missingCleanups), which supersedes its hash.
				id, e.libs[0], fmt.Sprint("library:", e.libs[0]), thumbnails.CoverRelPath(id, 256, protocol.ImageWebP), now, now); err != nil {
				t.Fatal(err)
			}
		}
		e.start(t, fastConfig(nil))
		waitFor(t, "hash rows", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM thumbnails WHERE status = 'pending' AND task = 'hash'`)
			return n == 3
		})
	})
	t.Run("hash mode off: no hash job", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 1)
		if err := e.control.PutSettings(e.ctx, map[string]string{"scan.hash.mode": "off"}); err != nil {
			t.Fatal(err)
		}
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh)
		s := e.start(t, fastConfig(nil))
		scan := e.work(t)
		waitFor(t, "follow-up row", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM job_followups WHERE job_id = ? AND hash_requested = 0`, scan.ID)
			return n == 1
		})
		if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM jobs WHERE kind = 'hash'`); n != 0 {
			t.Fatalf("%d hash jobs", n)
		}
		_ = s
	})
}

func TestPeriodicAndMaintenance(t *testing.T) {
	t.Parallel()
	t.Run("a due library is scanned on start, once", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 2)
		past := protocol.FormatTime(e.control.Now().Add(-72 * time.Hour))
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE libraries SET scan_interval_minutes = 60, last_scan_requested_at = ? WHERE id = ?`, past, e.libs[0]); err != nil {
			t.Fatal(err)
		}
		e.start(t, fastConfig(nil))
		waitFor(t, "scheduled scan", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM jobs WHERE kind = 'scan' AND library_id = ?`, e.libs[0])
			return n == 1
		})
		time.Sleep(150 * time.Millisecond) // several schedule ticks
		n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT (SELECT count(*) FROM jobs WHERE kind = 'scan') + (SELECT count(*) FROM scan_requests)`)
		if n != 1 {
			t.Fatalf("%d scan requests for 72 missed hours", n)
		}
	})
	t.Run("stale lease recovered and retried", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 1)
		job := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh).Job
		if j, err := leases.New(e.worker).ClaimJob(e.ctx, "dead", 10*time.Millisecond); err != nil || j == nil || j.ID != job.ID {
			t.Fatalf("claim %+v %v", j, err)
		}
		e.start(t, fastConfig(nil))
		waitFor(t, "recovery", func() bool {
			n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM jobs WHERE id = ? AND error_code = 'lease_expired'
				AND status IN ('retryable','pending')`, job.ID)
			return n == 1
		})
	})
	t.Run("a failing service is counted and the others go on", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 1)
		reg := prometheus.NewRegistry()
		cfg := fastConfig(reg)
		cfg.CleanupInterval = 10 * time.Millisecond
		s := New(e.control, cfg).WithCleanups(panicky{})
		if err := s.Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		waitFor(t, "errors counted", func() bool { return counterValue(s.metrics.errors.WithLabelValues("cleanups")) >= 2 })
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh)
		e.work(t)
	})
	t.Run("wal: truncate over the threshold, passive on schedule", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 0)
		if err := e.control.PutSettings(e.ctx, map[string]string{"wal.checkpoint.truncate_threshold_mb": "1"}); err != nil {
			t.Fatal(err)
		}
		raw, err := sql.Open("sqlite3", "file:"+e.path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		raw.SetMaxOpenConns(1)
		if _, err := raw.Exec(`PRAGMA wal_autocheckpoint = 0; CREATE TABLE filler (b BLOB)`); err != nil {
			t.Fatal(err)
		}
		for range 40 {
			if _, err := raw.Exec(`INSERT INTO filler VALUES (randomblob(65536))`); err != nil {
				t.Fatal(err)
			}
		}
		s := New(e.control, fastConfig(nil))
		if n, err := s.walCheckpoints(e.ctx); err != nil || n != 1 {
			t.Fatalf("first pass: %d %v", n, err)
		}
		w, err := e.control.LatestCheckpoint(e.ctx)
		if err != nil || w.RequestedMode != "truncate" || w.Status != "pending" {
			t.Fatalf("row %+v %v", w, err)
		}
		// the active row absorbs the passive request; nothing new
		if n, err := s.walCheckpoints(e.ctx); err != nil || n != 0 {
			t.Fatalf("second pass: %d %v", n, err)
		}
	})
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

type panicky struct{}

func (panicky) ScheduleMissingCleanups(context.Context, time.Duration) (int64, error) {
	panic("boom")
}

// TestCoverLayoutChange: after cover.cache.shard_count changes, covers in
// the old layout are flagged for a new render and a shards:<n> cleanup is
// scheduled; once every cover is in the new layout nothing more happens.
func TestCoverLayoutChange(t *testing.T) {
	t.Parallel()
	e := setup(t, 1)
	s := New(e.control, fastConfig(nil))
	now := protocol.FormatTime(e.control.Now())
	file, err := storetest.InsertID(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
		cover_updated_at, created_at, updated_at) VALUES (?, 'a.cbz', 1, 1, 1, ?, ?) RETURNING id`, e.libs[0], now, now)
	if err != nil {
		t.Fatal(err)
	}
	old := thumbnails.CoverRelPath(file, 256, protocol.ImageWebP)
	if _, err := storetest.Exec(e.ctx, e.control, `INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath,
		created_at, updated_at) VALUES (?, ?, ?, 'ready', ?, ?, ?)`, file, e.libs[0], thumbnails.ThumbnailGroupKey(e.libs[0]), old, now, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.missingCleanups(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM thumbnail_cleanup_jobs`); n != 0 {
		t.Fatal("cleanup scheduled although the layout did not change")
	}
	if err := e.control.PutSettings(e.ctx, map[string]string{"cover.cache.shard_count": "16"}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent: the second pass adds nothing
		if _, err := s.missingCleanups(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM library_files WHERE id = ? AND needs_cover = 1`, file); n != 1 {
		t.Fatal("old-layout cover not flagged for a new render")
	}
	if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM thumbnail_cleanup_jobs WHERE group_key = 'shards:16' AND status = 'pending'`); n != 1 {
		t.Fatalf("%d shards:16 cleanups pending, want 1", n)
	}
}
