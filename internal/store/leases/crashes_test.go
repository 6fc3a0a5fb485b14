package leases_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// TestOutagesAreNotCrashes: a cover or cleanup row whose worker lost the
// database (its lease ran out, but its workers row shows it alive
// afterwards) goes back to pending uncounted, however often; a holder that
// died (no refresh for DeadAfterLeases leases, a restart under its id, no
// workers row) counts; an undecided holder's row waits.
func TestOutagesAreNotCrashes(t *testing.T) {
	register := func(t *testing.T, f *fixture, id string) {
		t.Helper()
		if err := f.worker.RegisterWorker(f.ctx, leases.Worker{WorkerID: id, Host: "h", PID: 1, Version: "v"}); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(t *testing.T, f *fixture, id string) {
		t.Helper()
		if err := f.worker.TouchWorker(f.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	recover := func(t *testing.T, f *fixture) leases.RecoverCounts {
		t.Helper()
		c, err := f.control.RecoverStale(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	claimThumb := func(t *testing.T, f *fixture, id int64) {
		t.Helper()
		if th, err := f.worker.ClaimThumbnail(f.ctx, "w", lease); err != nil || th == nil || th.ID != id {
			t.Fatalf("claim: %+v %v, want %d", th, err, id)
		}
	}

	t.Run("outages, covers and cleanups", func(t *testing.T) {
		f := setupLease(t)
		register(t, f, "w")
		thumb := f.addThumb(t, 1, "g")
		clean := f.insert(t, `INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('other', ?, ?, ?) RETURNING id`,
			f.now(), f.now(), f.now())
		for i := range leases.MaxRecoveries + 2 {
			claimThumb(t, f, thumb)
			if c, err := f.worker.ClaimCleanup(f.ctx, "w", lease); err != nil || c == nil || c.ID != clean {
				t.Fatalf("claim cleanup %d: %+v %v", i, c, err)
			}
			// The worker is cut off for a lease and a half: its rows go stale,
			// and while it stays away nothing can tell it from a dead one.
			f.clock.Advance(lease * 3 / 2)
			if c := recover(t, f); c.Thumbnails != 0 || c.Cleanup != 0 {
				t.Fatalf("outage %d: recovered %+v while the holder is undecided", i, c)
			}
			// It comes back and refreshes its workers row; its lease is lost.
			touch(t, f, "w")
			if c := recover(t, f); c.Thumbnails != 1 || c.Cleanup != 1 {
				t.Fatalf("outage %d: recovered %+v, want both rows", i, c)
			}
		}
		if got := f.str(t, `SELECT status || recovered_count FROM thumbnails WHERE id = ?`, thumb); got != "pending0" {
			t.Fatalf("cover %s after %d outages, want pending0", got, leases.MaxRecoveries+2)
		}
		if got := f.str(t, `SELECT status || recovered_count FROM thumbnail_cleanup_jobs WHERE id = ?`, clean); got != "pending0" {
			t.Fatalf("cleanup %s, want pending0", got)
		}
	})

	t.Run("a holder silent for DeadAfterLeases leases died", func(t *testing.T) {
		f := setupLease(t)
		register(t, f, "w")
		thumb := f.addThumb(t, 1, "g")
		for i := 1; i <= leases.MaxRecoveries; i++ {
			touch(t, f, "w")
			claimThumb(t, f, thumb)
			f.clock.Advance(lease + time.Second)
			if c := recover(t, f); c.Thumbnails != 0 {
				t.Fatalf("crash %d: recovered one lease after the last refresh", i)
			}
			f.clock.Advance(leases.DeadAfterLeases * lease)
			if c := recover(t, f); c.Thumbnails != 1 {
				t.Fatalf("crash %d: not recovered after %d leases", i, leases.DeadAfterLeases)
			}
		}
		if got := f.str(t, `SELECT status || ',' || error_code || ',' || recovered_count FROM thumbnails WHERE id = ?`, thumb); got != "failed,render_crashed,3" {
			t.Fatalf("row %s", got)
		}
	})

	t.Run("a restart under the same id is a crash, a graceful stop is not", func(t *testing.T) {
		f := setupLease(t)
		register(t, f, "w")
		thumb := f.addThumb(t, 1, "g")
		claimThumb(t, f, thumb)
		f.clock.Advance(lease + time.Second)
		register(t, f, "w") // the supervisor started workerd again
		if c := recover(t, f); c.Thumbnails != 1 {
			t.Fatalf("recovered %+v", c)
		}
		claimThumb(t, f, thumb)
		f.clock.Advance(lease + time.Second)
		if err := f.worker.StopWorker(f.ctx, "w"); err != nil {
			t.Fatal(err)
		}
		if c := recover(t, f); c.Thumbnails != 1 {
			t.Fatalf("recovered %+v", c)
		}
		if got := f.str(t, `SELECT status || recovered_count FROM thumbnails WHERE id = ?`, thumb); got != "pending1" {
			t.Fatalf("row %s, want pending1", got)
		}
	})
}

// TestThumbnailFence: what a render writes (the file's cover version, the
// row's end) is refused once its claim is no longer the row's live lease:
// expired, recovered, or claimed again by the same worker (a new epoch).
func TestThumbnailFence(t *testing.T) {
	f := setupLease(t)
	lib := testfactory.Library(t, f.controlDB, nil)
	file := testfactory.File(t, f.controlDB, &testfactory.FileOpts{LibraryID: lib})
	id := f.addThumb(t, file, "g")
	version := func() int64 {
		return f.num(t, `SELECT coalesce(cover_updated_at, 0) FROM library_files WHERE id = ?`, file)
	}
	first, err := f.worker.ClaimThumbnail(f.ctx, "w", lease)
	if err != nil || first == nil || first.ID != id || first.LeaseEpoch != 1 {
		t.Fatalf("claim %+v %v", first, err)
	}
	if _, err := thumbnails.New(f.workerDB).MarkCoverRendered(f.ctx, first.Fence(), file); err != nil {
		t.Fatalf("live claim refused: %v", err)
	}
	v := version()
	// The lease runs out: lost already, before any recovery.
	f.clock.Advance(lease + time.Second)
	if _, err := thumbnails.New(f.workerDB).MarkCoverRendered(f.ctx, first.Fence(), file); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("expired claim: %v, want ErrLeaseLost", err)
	}
	if err := f.worker.FinishThumbnail(f.ctx, first.Fence(), leases.ThumbnailDone{Width: 1}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("expired finish: %v", err)
	}
	// Recovered (no workers row: a crash) and claimed again by the same
	// worker: the first run's token is dead, the second's lives.
	if c, err := f.control.RecoverStale(f.ctx); err != nil || c.Thumbnails != 1 {
		t.Fatalf("recover %+v %v", c, err)
	}
	second, err := f.worker.ClaimThumbnail(f.ctx, "w", lease)
	if err != nil || second == nil || second.LeaseEpoch != 2 {
		t.Fatalf("second claim %+v %v", second, err)
	}
	if _, err := thumbnails.New(f.workerDB).MarkCoverRendered(f.ctx, first.Fence(), file); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("old claim's cover mark: %v", err)
	}
	if err := f.worker.FailThumbnail(f.ctx, first.Fence(), protocol.ErrDecodeError, "old run"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("old claim's failure: %v", err)
	}
	if err := f.worker.FinishThumbnail(f.ctx, first.Fence(), leases.ThumbnailDone{Width: 1}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("old claim's finish: %v", err)
	}
	if got := version(); got != v {
		t.Fatalf("cover version %d after refused marks, want %d", got, v)
	}
	if err := f.worker.FinishThumbnail(f.ctx, second.Fence(), leases.ThumbnailDone{Width: 2, Height: 3, BytesSize: 4}); err != nil {
		t.Fatalf("live finish: %v", err)
	}
	if got := f.str(t, `SELECT status || width || coalesce(error_code, '-') FROM thumbnails WHERE id = ?`, id); got != "ready2-" {
		t.Fatalf("row %s", got)
	}
}

// TestJobOutagesBurnNoAttempt: a job whose live worker lost the database
// is recovered lease_lost and requeued without counting an attempt, however
// often; a job whose worker died (no workers row) is lease_expired and
// counts, up to max_attempts_exceeded.
func TestJobOutagesBurnNoAttempt(t *testing.T) {
	const maxAttempts = 3
	run := func(t *testing.T, f *fixture, id int64, outage bool) {
		t.Helper()
		if outage {
			if err := f.worker.TouchWorker(f.ctx, "w"); err != nil {
				t.Fatal(err)
			}
		}
		j, err := f.worker.ClaimJob(f.ctx, "w", lease)
		if err != nil || j == nil || j.ID != id {
			t.Fatalf("claim %+v %v", j, err)
		}
		f.clock.Advance(lease * 3 / 2)
		if outage {
			if c, err := f.control.RecoverStale(f.ctx); err != nil || c.Jobs != 0 {
				t.Fatalf("recovered %+v %v while the holder is undecided", c, err)
			}
			if err := f.worker.TouchWorker(f.ctx, "w"); err != nil { // back
				t.Fatal(err)
			}
		}
		if c, err := f.control.RecoverStale(f.ctx); err != nil || c.Jobs != 1 {
			t.Fatalf("recover %+v %v", c, err)
		}
		f.clock.Advance(time.Hour) // past any backoff
		for range 2 {              // stamp retry_after, then requeue
			if _, _, err := f.control.RequeueRetryableJobs(f.ctx, maxAttempts); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(time.Hour)
		}
	}
	row := func(f *fixture, id int64) string {
		return f.str(t, `SELECT status || ',' || attempt || ',' || coalesce(error_code, '-') FROM jobs WHERE id = ?`, id)
	}

	t.Run("outages", func(t *testing.T) {
		f := setupLease(t)
		if err := f.worker.RegisterWorker(f.ctx, leases.Worker{WorkerID: "w", Host: "h", PID: 1, Version: "v"}); err != nil {
			t.Fatal(err)
		}
		id := f.addJob(t, "hash", "normal", 0)
		for range maxAttempts + 2 {
			run(t, f, id, true)
		}
		if got := row(f, id); got != "pending,1,"+protocol.ErrLeaseLost {
			t.Fatalf("job %s after %d outages, want pending at attempt 1", got, maxAttempts+2)
		}
	})
	t.Run("crashes", func(t *testing.T) {
		f := setupLease(t)
		id := f.addJob(t, "hash", "normal", 0)
		for range maxAttempts {
			run(t, f, id, false)
		}
		if got := row(f, id); got != "failed,3,"+protocol.ErrMaxAttemptsExceeded {
			t.Fatalf("job %s after %d crashes", got, maxAttempts)
		}
	})
}
