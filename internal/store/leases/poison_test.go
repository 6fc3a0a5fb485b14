package leases_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// TestPoisonPills: a row whose worker keeps dying fails at MaxRecoveries
// instead of being claimed forever, renders alone once it is a suspect, and
// a graceful release never counts.
func TestPoisonPills(t *testing.T) {
	// crash claims id as w and lets its lease run out, as a killed
	// process would.
	crash := func(t *testing.T, f *fixture, id int64) {
		t.Helper()
		th, err := f.worker.ClaimThumbnail(f.ctx, "w", lease)
		if err != nil || th == nil || th.ID != id {
			t.Fatalf("claim: %+v %v, want %d", th, err, id)
		}
		f.clock.Advance(lease + time.Second)
	}

	t.Run("thumbnail fails with render_crashed at the third recovery", func(t *testing.T) {
		f := setupLease(t)
		poison := f.addThumb(t, 1, "g")
		for i := 1; i <= leases.MaxRecoveries; i++ {
			crash(t, f, poison)
			if c, err := f.control.RecoverStale(f.ctx); err != nil || c.Thumbnails != 1 {
				t.Fatalf("recovery %d: %+v %v", i, c, err)
			}
		}
		got := f.str(t, `SELECT status || ',' || error_code || ',' || recovered_count || ',' || coalesce(`+storetest.TimeText("retry_after")+`, '-') || ','
			|| coalesce(worker_id, '-') || ',' || coalesce(`+storetest.TimeText("lease_expires_at")+`, '-') || ',' || CASE WHEN finished_at IS NOT NULL THEN 1 ELSE 0 END FROM thumbnails WHERE id = ?`, poison)
		if got != "failed,"+protocol.ErrRenderCrashed+",3,-,-,-,1" {
			t.Fatalf("row %s", got)
		}
		m, err := thumbnails.New(f.controlDB).ThumbnailMetrics(f.ctx)
		if err != nil || len(m.Crashed) != 1 || m.Crashed[0].ThumbnailID != poison || m.Crashed[0].FileID != 1 {
			t.Fatalf("metrics list %+v, %v; want the crashed cover", m.Crashed, err)
		}
		f.clock.Advance(48 * time.Hour)
		if n, err := f.control.RequeueFailedThumbnails(f.ctx); err != nil || n != 0 {
			t.Fatalf("the failed-cover retry brought it back: %d %v", n, err)
		}
		if th, err := f.worker.ClaimThumbnail(f.ctx, "w", lease); th != nil || err != nil {
			t.Fatalf("claimed %+v %v", th, err)
		}
	})

	t.Run("a suspect renders alone", func(t *testing.T) {
		f := setupLease(t)
		suspect := f.addThumb(t, 1, "g")
		f.clock.Advance(time.Millisecond)
		crash(t, f, suspect)
		fresh := f.addThumb(t, 2, "g")
		f.clock.Advance(time.Millisecond)
		later := f.addThumb(t, 3, "g")
		// Recovered at the next claim: the fresh row goes first although
		// the suspect is older.
		a, _ := f.worker.ClaimThumbnail(f.ctx, "w", lease)
		if a == nil || a.ID != fresh || f.num(t, `SELECT recovered_count FROM thumbnails WHERE id = ?`, suspect) != 1 {
			t.Fatalf("claim %+v, want the fresh row %d first", a, fresh)
		}
		b, _ := f.worker.ClaimThumbnail(f.ctx, "w", lease)
		if b == nil || b.ID != later {
			t.Fatalf("claim %+v, want %d", b, later)
		}
		// w runs covers: the suspect waits for a worker with nothing running.
		if c, _ := f.worker.ClaimThumbnail(f.ctx, "w", lease); c != nil {
			t.Fatalf("suspect claimed beside running covers: %+v", c)
		}
		s, _ := f.worker.ClaimThumbnail(f.ctx, "other", lease)
		if s == nil || s.ID != suspect {
			t.Fatalf("idle worker claimed %+v, want the suspect", s)
		}
		f.addThumb(t, 4, "g")
		if c, _ := f.worker.ClaimThumbnail(f.ctx, "other", lease); c != nil {
			t.Fatalf("claimed beside a running suspect: %+v", c)
		}
		if c, _ := f.worker.ClaimThumbnail(f.ctx, "w", lease); c == nil {
			t.Fatal("another worker was kept from fresh work")
		}
	})

	t.Run("a graceful release does not count", func(t *testing.T) {
		f := setupLease(t)
		id := f.addThumb(t, 1, "g")
		for range leases.MaxRecoveries + 1 {
			th, err := f.worker.ClaimThumbnail(f.ctx, "w", lease)
			if err != nil || th == nil || th.ID != id {
				t.Fatalf("claim %+v %v", th, err)
			}
			if err := f.worker.ReleaseLease(f.ctx, th.Fence()); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.str(t, `SELECT status || recovered_count FROM thumbnails WHERE id = ?`, id); got != "pending0" {
			t.Fatalf("row %s", got)
		}
	})

	t.Run("cleanup fails with cleanup_crashed", func(t *testing.T) {
		f := setupLease(t)
		id := f.insert(t, `INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('g', ?, ?, ?) RETURNING id`,
			f.now(), f.now(), f.now())
		for range leases.MaxRecoveries {
			if c, err := f.worker.ClaimCleanup(f.ctx, "w", lease); err != nil || c == nil || c.ID != id {
				t.Fatalf("claim %+v %v", c, err)
			}
			f.clock.Advance(lease + time.Second)
			if _, err := f.control.RecoverStale(f.ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.str(t, `SELECT status || ',' || error_code || ',' || recovered_count FROM thumbnail_cleanup_jobs WHERE id = ?`, id); got != "failed,cleanup_crashed,3" {
			t.Fatalf("row %s", got)
		}
	})
}

// TestThumbnailDeleteGuard: the database refuses to delete a pending or
// running cover row, to every writer; settled rows go.
func TestThumbnailDeleteGuard(t *testing.T) {
	f := setupLease(t)
	pending := f.addThumb(t, 1, "g")
	running := f.addThumb(t, 2, "g")
	if th, err := f.worker.ClaimThumbnail(f.ctx, "w", lease); err != nil || th == nil || th.ID != pending {
		t.Fatalf("claim %+v %v", th, err)
	}
	ready := f.addThumb(t, 3, "g")
	failed := f.addThumb(t, 4, "g")
	f.exec(t, `UPDATE thumbnails SET status = 'ready' WHERE id = ?`, ready)
	f.exec(t, `UPDATE thumbnails SET status = 'failed' WHERE id = ?`, failed)
	for _, st := range []*store.Store{f.controlDB, f.workerDB} {
		for _, id := range []int64{pending, running} {
			_, err := storetest.Exec(f.ctx, st, `DELETE FROM thumbnails WHERE id = ?`, id)
			if err == nil || !strings.Contains(err.Error(), "only ready or failed rows may be deleted") {
				t.Fatalf("delete of row %d: %v", id, err)
			}
		}
	}
	if _, err := rawDB(t, f.path).Exec(`DELETE FROM thumbnails WHERE status IN ('pending', 'running')`); err == nil {
		t.Fatal("a third party deleted unsettled rows")
	}
	if _, err := storetest.Exec(f.ctx, f.workerDB, `DELETE FROM thumbnails WHERE id IN (?, ?)`, ready, failed); err != nil {
		t.Fatal(err)
	}
	if n := f.num(t, `SELECT count(*) FROM thumbnails`); n != 2 {
		t.Fatalf("%d rows left, want the two unsettled ones", n)
	}
}
