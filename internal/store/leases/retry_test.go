package leases_test

import (
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestRequeueRetryableJobs(t *testing.T) {
	t.Run("backoff, attempt count, single-active slot", func(t *testing.T) {
		f := setupLease(t)
		scan := f.addJob(t, "scan", "normal", 0)
		f.worker.ClaimJob(f.ctx, "w", lease)
		f.clock.Advance(lease)
		f.control.RecoverStale(f.ctx)
		// Another scan/hash job takes the slot while the first waits.
		hash := f.addJob(t, "hash", "high", 0)
		rq, failed, err := f.control.RequeueRetryableJobs(f.ctx, 5)
		if err != nil || rq != 0 || failed != 0 {
			t.Fatalf("first pass %d %d %v", rq, failed, err)
		}
		ra := f.str(t, `SELECT retry_after FROM jobs WHERE id = ?`, scan)
		at, _ := protocol.ParseTime(ra)
		if d := at.Sub(f.clock.Now()); d < time.Second || d > 1250*time.Millisecond {
			t.Fatalf("retry_after in %v, want attempt⁴ s = 1s plus jitter", d)
		}
		f.clock.Advance(2 * time.Second)
		if rq, _, _ := f.control.RequeueRetryableJobs(f.ctx, 5); rq != 0 {
			t.Fatal("requeued while the slot is taken")
		}
		f.exec(t, `UPDATE jobs SET status = 'completed' WHERE id = ?`, hash)
		if rq, _, err := f.control.RequeueRetryableJobs(f.ctx, 5); rq != 1 || err != nil {
			t.Fatalf("requeue = %d, %v", rq, err)
		}
		if got := f.str(t, `SELECT status || attempt || coalesce(`+storetest.TimeText("retry_after")+`, '-') FROM jobs WHERE id = ?`, scan); got != "pending2-" {
			t.Fatalf("requeued %s", got)
		}
	})
	t.Run("max attempts and shutdown releases", func(t *testing.T) {
		f := setupLease(t)
		worn := f.addJob(t, "scan", "normal", 0)
		f.exec(t, `UPDATE jobs SET status = 'retryable', attempt = 3, error_code = 'lease_expired' WHERE id = ?`, worn)
		released := f.addJob(t, "hash", "normal", 0)
		f.exec(t, `UPDATE jobs SET attempt = 3 WHERE id = ?`, released)
		j, _ := f.worker.ClaimJob(f.ctx, "w", lease)
		if j == nil || j.ID != released {
			t.Fatalf("claimed %+v, want job %d", j, released)
		}
		if err := f.worker.ReleaseLease(f.ctx, j.Fence()); err != nil {
			t.Fatal(err)
		}
		rq, failed, err := f.control.RequeueRetryableJobs(f.ctx, 3)
		if err != nil || rq != 1 || failed != 1 {
			t.Fatalf("requeue = %d %d %v", rq, failed, err)
		}
		if got := f.str(t, `SELECT status || ',' || error_code || ',' || error_message FROM jobs WHERE id = ?`, worn); got != "failed,max_attempts_exceeded,gave up after 3 attempts; last error: lease_expired" {
			t.Fatalf("worn %s", got)
		}
		// A shutdown release is due at once and does not count an attempt.
		if got := f.str(t, `SELECT status || attempt FROM jobs WHERE id = ?`, released); got != "pending3" {
			t.Fatalf("released %s", got)
		}
	})
	t.Run("cancel requested while retryable", func(t *testing.T) {
		f := setupLease(t)
		id := f.addJob(t, "scan", "normal", 0)
		f.exec(t, `UPDATE jobs SET status = 'retryable', cancel_requested = 1 WHERE id = ?`, id)
		f.control.RequeueRetryableJobs(f.ctx, 5)
		if got := f.str(t, `SELECT status || error_code FROM jobs WHERE id = ?`, id); got != "cancelledcancelled" {
			t.Fatalf("row %s", got)
		}
	})
}

func TestWorkers(t *testing.T) {
	f := setupLease(t)
	w := leases.Worker{WorkerID: "host-1-abc", Host: "host", PID: 1, Version: "dev"}
	if err := f.worker.RegisterWorker(f.ctx, w); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(10 * time.Second)
	if err := f.worker.TouchWorker(f.ctx, w.WorkerID); err != nil {
		t.Fatal(err)
	}
	if err := f.worker.TouchWorker(f.ctx, "nobody"); err == nil {
		t.Fatal("touching a missing worker succeeded")
	}
	ws, err := f.control.ListWorkers(f.ctx)
	if err != nil || len(ws) != 1 || ws[0].LastSeenAt.String() != f.now() || ws[0].StoppedAt.Valid || ws[0].PID != 1 {
		t.Fatalf("workers %+v, %v", ws, err)
	}
	f.worker.StopWorker(f.ctx, w.WorkerID)
	ws, _ = f.control.ListWorkers(f.ctx)
	if !ws[0].StoppedAt.Valid || ws[0].StoppedAt.String() != f.now() {
		t.Fatalf("stopped %+v", ws[0])
	}
	f.worker.RegisterWorker(f.ctx, w) // restart with the same id
	ws, _ = f.control.ListWorkers(f.ctx)
	if ws[0].StoppedAt.Valid {
		t.Fatalf("restart kept stopped_at: %+v", ws[0])
	}
}

// TestRequeueRacesKeepOneActive runs the retry policy from two controld
// connections at once over several due scan/hash rows: the single-active
// index must still admit exactly one.
func TestRequeueRacesKeepOneActive(t *testing.T) {
	f := setupLease(t)
	for i := range 6 {
		id := f.addJob(t, []string{"scan", "hash"}[i%2], "normal", time.Duration(i)*time.Millisecond)
		f.exec(t, `UPDATE jobs SET status = 'retryable', retry_after = ? WHERE id = ?`, f.now(), id)
	}
	other := storetest.MustOpen(t, f.path, store.RoleControl, f.clock.Now)
	var wg sync.WaitGroup
	total := make([]int64, 2)
	for i, s := range []*leases.Leases{f.control, leases.New(other)} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				rq, _, err := s.RequeueRetryableJobs(f.ctx, 5)
				if err != nil {
					t.Error(err)
					return
				}
				total[i] += rq
			}
		}()
	}
	wg.Wait()
	if total[0]+total[1] != 1 {
		t.Fatalf("requeued %v, want exactly one in total", total)
	}
	if n := f.num(t, `SELECT count(*) FROM jobs WHERE status = 'pending'`); n != 1 {
		t.Fatalf("pending = %d", n)
	}
}
