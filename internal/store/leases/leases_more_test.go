package leases_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/backoff"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestThumbnailLease(t *testing.T) {
	t.Run("claim oldest, finish, fail with backoff, requeue", func(t *testing.T) {
		f := setupLease(t)
		a := f.addThumb(t, 1, "g")
		f.clock.Advance(time.Millisecond)
		b := f.addThumb(t, 2, "g")
		ta, err := f.worker.ClaimThumbnail(f.ctx, "w1", lease)
		if err != nil || ta == nil || ta.ID != a {
			t.Fatalf("first claim %+v, %v", ta, err)
		}
		tb, _ := f.worker.ClaimThumbnail(f.ctx, "w2", lease)
		if tb == nil || tb.ID != b {
			t.Fatalf("second claim %+v", tb)
		}
		if none, err := f.worker.ClaimThumbnail(f.ctx, "w3", lease); none != nil || err != nil {
			t.Fatalf("third claim %+v, %v", none, err)
		}
		if err := f.worker.HeartbeatLease(f.ctx, thumbFence(a, "w2", ta.LeaseEpoch), lease); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("foreign heartbeat %v", err)
		}
		if err := f.worker.FinishThumbnail(f.ctx, ta.Fence(), leases.ThumbnailDone{Width: 320, Height: 480, BytesSize: 9000}); err != nil {
			t.Fatal(err)
		}
		if got := f.str(t, `SELECT status || width || 'x' || height || ',' || bytes_size || coalesce(`+storetest.TimeText("lease_expires_at")+`, '-') FROM thumbnails WHERE id = ?`, a); got != "ready320x480,9000-" {
			t.Fatalf("ready row %s", got)
		}
		if err := f.worker.FailThumbnail(f.ctx, tb.Fence(), protocol.ErrDecodeError, "bad jpeg"); err != nil {
			t.Fatal(err)
		}
		want := "failed,decode_error,1," + protocol.FormatTime(f.clock.Now().Add(backoff.Thumbnail(1)))
		if got := f.str(t, `SELECT status || ',' || error_code || ',' || error_count || ',' || `+storetest.TimeText("retry_after")+` FROM thumbnails WHERE id = ?`, b); got != want {
			t.Fatalf("failed row %s, want %s", got, want)
		}
		if n, err := f.control.RequeueFailedThumbnails(f.ctx); err != nil || n != 0 {
			t.Fatalf("early requeue %d, %v", n, err)
		}
		f.clock.Advance(backoff.Thumbnail(1))
		// A newer pending row for the same file blocks the requeue (the
		// active-file unique index); once it is gone the failed row goes back.
		other := f.addThumb(t, 2, "g")
		if n, err := f.control.RequeueFailedThumbnails(f.ctx); err != nil || n != 0 {
			t.Fatalf("requeue with active row %d, %v", n, err)
		}
		f.exec(t, `UPDATE thumbnails SET status = 'failed' WHERE id = ?`, other) // only settled rows may go
		f.exec(t, `DELETE FROM thumbnails WHERE id = ?`, other)
		if n, err := f.control.RequeueFailedThumbnails(f.ctx); err != nil || n != 1 {
			t.Fatalf("requeue %d, %v", n, err)
		}
		if got := f.str(t, `SELECT status || error_count || coalesce(`+storetest.TimeText("retry_after")+`, '-') FROM thumbnails WHERE id = ?`, b); got != "pending1-" {
			t.Fatalf("requeued row %s", got)
		}
	})
	t.Run("gives up after max errors", func(t *testing.T) {
		f := setupLease(t)
		id := f.addThumb(t, 1, "g")
		f.exec(t, `UPDATE thumbnails SET error_count = ? WHERE id = ?`, backoff.ThumbnailMaxErrors-1, id)
		claimed, _ := f.worker.ClaimThumbnail(f.ctx, "w", lease)
		if claimed == nil || claimed.ID != id {
			t.Fatalf("claimed %+v", claimed)
		}
		if err := f.worker.FailThumbnail(f.ctx, claimed.Fence(), protocol.ErrNoPages, "empty"); err != nil {
			t.Fatal(err)
		}
		if got := f.str(t, `SELECT coalesce(`+storetest.TimeText("retry_after")+`, 'never') FROM thumbnails WHERE id = ?`, id); got != "never" {
			t.Fatalf("retry_after %s", got)
		}
	})
	t.Run("release", func(t *testing.T) {
		f := setupLease(t)
		id := f.addThumb(t, 1, "g")
		th, _ := f.worker.ClaimThumbnail(f.ctx, "w", lease)
		if err := f.worker.ReleaseLease(f.ctx, th.Fence()); err != nil {
			t.Fatal(err)
		}
		if got := f.str(t, `SELECT status || coalesce(worker_id, '-') FROM thumbnails WHERE id = ?`, id); got != "pending-" {
			t.Fatalf("released %s", got)
		}
	})
}

func TestCleanupLease(t *testing.T) {
	f := setupLease(t)
	due := f.now()
	busy := f.insert(t, `INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('g', ?, ?, ?) RETURNING id`, due, due, due)
	later := f.insert(t, `INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('h', ?, ?, ?) RETURNING id`,
		protocol.FormatTime(f.clock.Now().Add(time.Minute)), due, due)
	th := f.addThumb(t, 1, "g")
	if c, err := f.worker.ClaimCleanup(f.ctx, "w", lease); c != nil || err != nil {
		t.Fatalf("claim while group busy / not due = %+v, %v", c, err)
	}
	f.worker.ClaimThumbnail(f.ctx, "w", lease)
	f.worker.FinishThumbnail(f.ctx, thumbFence(th, "w", 1), leases.ThumbnailDone{})
	c, err := f.worker.ClaimCleanup(f.ctx, "w", lease)
	if err != nil || c == nil || c.ID != busy {
		t.Fatalf("claim after group settled = %+v, %v", c, err)
	}
	if err := f.worker.FinishCleanup(f.ctx, c.Fence(), 3, 4); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	c, _ = f.worker.ClaimCleanup(f.ctx, "w", lease)
	if c == nil || c.ID != later {
		t.Fatalf("due claim %+v", c)
	}
	if err := f.worker.FailCleanup(f.ctx, c.Fence(), 1, 0, protocol.ErrIOError, "disk"); err != nil {
		t.Fatal(err)
	}
	if got := f.str(t, `SELECT `+storetest.Concat(`status || deleted_files || deleted_rows || coalesce(error_code, '')`, ",", "id")+` FROM thumbnail_cleanup_jobs`); got != "completed34,failed10io_error" {
		t.Fatalf("rows %s", got)
	}
}

// TestCleanupGroups: a file:<id> cleanup waits for that file's active
// thumbnail only; a shards:<n> cleanup waits for every active thumbnail.
func TestCleanupGroups(t *testing.T) {
	f := setupLease(t)
	due := f.now()
	fileKey := f.insert(t, `INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('file:7', ?, ?, ?) RETURNING id`, due, due, due)
	shards := f.insert(t, `INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('shards:16', ?, ?, ?) RETURNING id`, due, due, due)
	other := f.addThumb(t, 8, "library:1")
	own := f.addThumb(t, 7, "library:1")
	if c, _ := f.worker.ClaimCleanup(f.ctx, "w", lease); c != nil {
		t.Fatalf("claimed %s while file 7 has an active thumbnail", c.GroupKey)
	}
	for _, id := range []int64{other, own} {
		f.worker.ClaimThumbnail(f.ctx, "w", lease)
		f.worker.FinishThumbnail(f.ctx, thumbFence(id, "w", 1), leases.ThumbnailDone{})
		if id == other {
			if c, _ := f.worker.ClaimCleanup(f.ctx, "w", lease); c != nil {
				t.Fatalf("claimed %s while file 7 is still active", c.GroupKey)
			}
		}
	}
	for _, want := range []int64{fileKey, shards} {
		c, err := f.worker.ClaimCleanup(f.ctx, "w", lease)
		if err != nil || c == nil || c.ID != want {
			t.Fatalf("claim = %+v, %v; want %d", c, err, want)
		}
	}
}

func TestCheckpointLease(t *testing.T) {
	f := setupLease(t)
	id := f.insert(t, `INSERT INTO wal_maintenance_jobs (requested_mode, execute_after, created_at, updated_at) VALUES ('truncate', ?, ?, ?) RETURNING id`, f.now(), f.now(), f.now())
	w, err := f.worker.ClaimCheckpoint(f.ctx, "w", lease)
	if err != nil || w == nil || w.RequestedMode != "truncate" {
		t.Fatalf("claim %+v, %v", w, err)
	}
	fig := leases.CheckpointFigures{Busy: 1, LogFrames: 10, CheckpointedFrames: 4}
	if err := f.worker.RetryCheckpoint(f.ctx, w.Fence(), fig, protocol.ErrCheckpointBusy, "readers", 2); err != nil {
		t.Fatal(err)
	}
	if w, _ := f.worker.ClaimCheckpoint(f.ctx, "w", lease); w != nil {
		t.Fatal("claimed before retry_after")
	}
	f.clock.Advance(backoff.WAL(1))
	if w, _ = f.worker.ClaimCheckpoint(f.ctx, "w", lease); w == nil || w.RetryCount != 1 {
		t.Fatalf("retry claim %+v", w)
	}
	f.worker.RetryCheckpoint(f.ctx, w.Fence(), fig, protocol.ErrCheckpointBusy, "readers", 2)
	f.clock.Advance(backoff.WAL(2))
	w, _ = f.worker.ClaimCheckpoint(f.ctx, "w", lease)
	if err := f.worker.RetryCheckpoint(f.ctx, w.Fence(), fig, protocol.ErrCheckpointBusy, "readers", 2); err != nil {
		t.Fatal(err)
	}
	if got := f.str(t, `SELECT status || retry_count || checkpoint_log_frames || coalesce(`+storetest.TimeText("finished_at")+`, '-') FROM wal_maintenance_jobs WHERE id = ?`, id); got != "failed310"+f.now() {
		t.Fatalf("exhausted row %s", got)
	}
	ok := f.insert(t, `INSERT INTO wal_maintenance_jobs (execute_after, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, f.now(), f.now(), f.now())
	w, _ = f.worker.ClaimCheckpoint(f.ctx, "w", lease)
	if err := f.worker.ReleaseLease(f.ctx, w.Fence()); err != nil {
		t.Fatal(err)
	}
	if w, _ = f.worker.ClaimCheckpoint(f.ctx, "w", lease); w == nil || w.ID != ok || w.RetryCount != 0 {
		t.Fatalf("released row not claimable at once: %+v", w)
	}
	if err := f.worker.SucceedCheckpoint(f.ctx, w.Fence(), leases.CheckpointFigures{LogFrames: 7, CheckpointedFrames: 7}); err != nil {
		t.Fatal(err)
	}
	if got := f.str(t, `SELECT status || checkpointed_frames || coalesce(error_code, '-') FROM wal_maintenance_jobs WHERE id = ?`, ok); got != "completed7-" {
		t.Fatalf("completed row %s", got)
	}
}

func TestReleaseWorker(t *testing.T) {
	f := setupLease(t)
	f.addJob(t, "scan", "normal", 0)
	for i := range 3 {
		f.addThumb(t, int64(i), "g")
	}
	f.worker.ClaimJob(f.ctx, "w", lease)
	f.worker.ClaimThumbnail(f.ctx, "w", lease)
	f.worker.ClaimThumbnail(f.ctx, "w", lease)
	f.worker.ClaimThumbnail(f.ctx, "other", lease)
	c, err := f.worker.ReleaseWorker(f.ctx, "w")
	if err != nil || c != (leases.RecoverCounts{Jobs: 1, Thumbnails: 2}) {
		t.Fatalf("release = %+v, %v", c, err)
	}
	if n := f.num(t, `SELECT count(*) FROM thumbnails WHERE status = 'running'`); n != 1 {
		t.Fatalf("other worker's lease touched: running = %d", n)
	}
}
