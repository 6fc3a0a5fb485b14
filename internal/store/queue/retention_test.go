package queue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func insertJobAt(t *testing.T, st *store.Store, kind, status string, finished time.Time) int64 {
	t.Helper()
	ts := protocol.FormatTime(finished)
	var fin any = ts
	if status == "pending" || status == "running" || status == "retryable" {
		fin = nil
	}
	id, err := storetest.InsertID(context.Background(), st, `INSERT INTO jobs (kind, status, created_at, updated_at, finished_at)
		VALUES (?, ?, ?, ?, ?) RETURNING id`, kind, status, ts, ts, fin)
	if err != nil {
		t.Fatalf("insert job: %v", err)
	}
	return id
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	t.Run("jobs: only old terminal rows, failed kept longer, in batches while inserting", func(t *testing.T) {
		e := setupQueue(t, 0)
		now := e.st.Now()
		old, mid := now.Add(-48*time.Hour), now.Add(-2*time.Hour)
		keep := map[int64]bool{}
		gone := map[int64]bool{}
		for range 40 {
			gone[insertJobAt(t, e.st, "thumbnail", "completed", old)] = true
			gone[insertJobAt(t, e.st, "delete", "cancelled", old)] = true
			keep[insertJobAt(t, e.st, "thumbnail", "failed", old)] = true // failed: 7 days
			gone[insertJobAt(t, e.st, "thumbnail", "failed", old.Add(-8*24*time.Hour))] = true
			keep[insertJobAt(t, e.st, "thumbnail", "completed", mid)] = true // recent
			keep[insertJobAt(t, e.st, "thumbnail", "retryable", old)] = true // not terminal
		}
		keep[insertJobAt(t, e.st, "scan", "running", old)] = true
		// A delete job that carried out a plan holds the record of its trash.
		bound := insertJobAt(t, e.st, "delete", "completed", old)
		if _, err := storetest.Exec(ctx, e.st, `INSERT INTO delete_plans (policy, group_count, remove_count, bytes_freed, job_id, created_at, expires_at)
			VALUES ('oldest', 0, 0, 0, ?, ?, ?)`, bound, protocol.FormatTime(old), protocol.FormatTime(old)); err != nil {
			t.Fatal(err)
		}
		keep[bound] = true
		p := queue.RetentionPolicy{JobsBefore: now.Add(-24 * time.Hour), FailedBefore: now.Add(-7 * 24 * time.Hour)}

		// a writer inserts fresh terminal jobs all along
		stop := make(chan struct{})
		var inserted atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ts := protocol.FormatTime(now)
				if _, err := storetest.Exec(ctx, e.st, `INSERT INTO jobs (kind, status, created_at, updated_at, finished_at)
					VALUES ('thumbnail', 'completed', ?, ?, ?)`, ts, ts, ts); err != nil {
					t.Error(err)
					return
				}
				inserted.Add(1)
			}
		}()
		var batches []int64
		for {
			n, err := queue.New(e.st).DeleteOldJobs(ctx, p, 25)
			if err != nil {
				t.Fatal(err)
			}
			if n > 25 {
				t.Fatalf("batch deleted %d > 25", n)
			}
			batches = append(batches, n)
			if n < 25 {
				break
			}
		}
		close(stop)
		wg.Wait()
		if len(batches) < 5 {
			t.Fatalf("%d batches %v, want ≥ 5 for 120 rows", len(batches), batches)
		}
		for id := range gone {
			if n, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM jobs WHERE id = ?`, id); n != 0 {
				t.Fatalf("job %d survived", id)
			}
		}
		for id := range keep {
			if n, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM jobs WHERE id = ?`, id); n != 1 {
				t.Fatalf("job %d deleted", id)
			}
		}
		total, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM jobs`)
		if total != int64(len(keep))+inserted.Load() {
			t.Fatalf("%d jobs left, want %d kept + %d inserted", total, len(keep), inserted.Load())
		}
	})
	t.Run("scan sessions beyond the newest per library, errors first", func(t *testing.T) {
		e := setupQueue(t, 2)
		ts := protocol.FormatTime(e.st.Now())
		sessions := map[int64][]int64{}
		for _, l := range e.libs {
			for i := range 8 {
				status := "succeeded"
				if i == 7 {
					status = "running"
				}
				id, err := storetest.InsertID(ctx, e.st, `INSERT INTO scan_sessions (library_id, status, started_at) VALUES (?, ?, ?) RETURNING id`, l, status, ts)
				if err != nil {
					t.Fatal(err)
				}
				sessions[l] = append(sessions[l], id)
				for range 30 {
					if _, err := storetest.Exec(ctx, e.st, `INSERT INTO scan_errors (session_id, relative_path, error_code, created_at)
						VALUES (?, 'a.cbz', 'io_error', ?)`, id, ts); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		p := queue.RetentionPolicy{KeepSessions: 3}
		calls := 0
		for {
			n, err := queue.New(e.st).PruneScanSessions(ctx, p, 40)
			if err != nil {
				t.Fatal(err)
			}
			if n > 40 {
				t.Fatalf("call deleted %d rows", n)
			}
			calls++
			if n == 0 {
				break
			}
		}
		// 2 libraries × 5 old sessions × 30 errors = 300 errors in batches of 40
		if calls < 8 {
			t.Fatalf("%d calls", calls)
		}
		for _, l := range e.libs {
			ids := sessions[l]
			for i, id := range ids {
				n, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM scan_sessions WHERE id = ?`, id)
				errs, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM scan_errors WHERE session_id = ?`, id)
				want := int64(0)
				if i >= 5 {
					want = 1
				}
				if n != want || errs != 30*want {
					t.Fatalf("library %d session #%d: %d rows, %d errors", l, i, n, errs)
				}
			}
		}
	})
	t.Run("wal and cleanup rows", func(t *testing.T) {
		e := setupQueue(t, 0)
		now := e.st.Now()
		old := protocol.FormatTime(now.Add(-8 * 24 * time.Hour))
		recent := protocol.FormatTime(now.Add(-time.Hour))
		for _, row := range []struct{ status, finished string }{
			{"completed", old}, {"failed", old}, {"completed", recent}, {"retryable", old}, {"pending", old},
		} {
			var fin any = row.finished
			if row.status == "retryable" || row.status == "pending" {
				fin = nil
			}
			if _, err := storetest.Exec(ctx, e.st, `INSERT INTO wal_maintenance_jobs (status, execute_after, created_at, updated_at, finished_at)
				VALUES (?, ?, ?, ?, ?)`, row.status, old, old, old, fin); err != nil {
				t.Fatal(err)
			}
			if row.status == "retryable" {
				continue
			}
			if _, err := storetest.Exec(ctx, e.st, `INSERT INTO thumbnail_cleanup_jobs (group_key, status, execute_after, created_at, updated_at, finished_at)
				VALUES ('g', ?, ?, ?, ?, ?)`, row.status, old, old, old, fin); err != nil {
				t.Fatal(err)
			}
		}
		p := queue.RetentionPolicy{MaintenanceBefore: now.Add(-7 * 24 * time.Hour), FailedBefore: now.Add(-7 * 24 * time.Hour)}
		n, err := queue.New(e.st).DeleteOldMaintenance(ctx, p, 100)
		if err != nil || n != 4 {
			t.Fatalf("deleted %d, %v", n, err)
		}
		w, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM wal_maintenance_jobs WHERE status IN ('completed','retryable','pending')`)
		c, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status IN ('completed','pending')`)
		if w != 3 || c != 2 {
			t.Fatalf("left wal %d cleanup %d", w, c)
		}
	})
}
