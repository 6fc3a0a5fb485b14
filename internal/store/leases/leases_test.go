package leases_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/backoff"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

const lease = 30 * time.Second

type fixture struct {
	ctx     context.Context
	clock   *storetest.Clock
	control *leases.Leases // as controld holds them
	worker  *leases.Leases // as workerd holds them
	// controlDB and workerDB are the two stores the leases are of.
	controlDB, workerDB *store.Store
	path                string
}

// setupLease opens a fresh migrated file as controld and as workerd, both on one
// settable clock.
func setupLease(t *testing.T) *fixture {
	t.Helper()
	db := storetest.MustOpenClockedDB(t)
	return &fixture{ctx: context.Background(), clock: db.Clock, path: db.Path,
		control: leases.New(db.Control), worker: leases.New(db.Worker), controlDB: db.Control, workerDB: db.Worker}
}

func (f *fixture) now() string { return protocol.FormatTime(f.clock.Now()) }

// exec writes as a third party would: plain SQL on the control connection.
func (f *fixture) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := storetest.Exec(f.ctx, f.controlDB, q, args...); err != nil {
		t.Fatalf("exec %q: %v", q, err)
	}
}

// insert is exec for an `INSERT … RETURNING id`, returning the id.
func (f *fixture) insert(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	id, err := storetest.InsertID(f.ctx, f.controlDB, q, args...)
	if err != nil {
		t.Fatalf("insert %q: %v", q, err)
	}
	return id
}

func (f *fixture) addJob(t *testing.T, kind, priority string, created time.Duration) int64 {
	t.Helper()
	ts := protocol.FormatTime(f.clock.Now().Add(created))
	return f.insert(t, `INSERT INTO jobs (kind, priority, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id`, kind, priority, ts, ts)
}

func (f *fixture) addThumb(t *testing.T, fileID int64, group string) int64 {
	t.Helper()
	return f.insert(t, `INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (?, 1, ?, 'x.webp', ?, ?) RETURNING id`, fileID, group, f.now(), f.now())
}

func (f *fixture) str(t *testing.T, q string, args ...any) string {
	t.Helper()
	var v any
	if err := rawDB(t, f.path).QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	switch v := v.(type) {
	case nil:
		return "<nil>"
	case []byte:
		return string(v)
	case time.Time: // PostgreSQL's timestamptz, as SQLite stores it
		return protocol.FormatTime(v)
	default:
		return fmt.Sprint(v)
	}
}

func (f *fixture) num(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	n, err := storetest.QueryInt(f.ctx, f.controlDB, q, args...)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	return n
}

func TestJobLease(t *testing.T) {
	t.Run("claim order and nothing eligible", func(t *testing.T) {
		f := setupLease(t)
		j, err := f.worker.ClaimJob(f.ctx, "w1", lease)
		if err != nil || j != nil {
			t.Fatalf("empty claim = %v, %v", j, err)
		}
		// Non scan/hash kinds are outside the single-active index, so
		// several can be pending and the order is visible.
		normalOld := f.addJob(t, "delete", "normal", -time.Hour)
		high := f.addJob(t, "delete", "high", 0)
		highOld := f.addJob(t, "delete", "high", -time.Minute)
		var got []int64
		for range 3 {
			j, err := f.worker.ClaimJob(f.ctx, "w1", lease, "delete")
			if err != nil || j == nil {
				t.Fatalf("claim: %v, %v", j, err)
			}
			if j.Status != "running" || j.Holder() != "w1" || (j.StartedAt == nil) {
				t.Fatalf("claimed row %+v", j)
			}
			got = append(got, j.ID)
		}
		if want := []int64{highOld, high, normalOld}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("claim order %v, want %v", got, want)
		}
	})
	t.Run("only the kinds asked for", func(t *testing.T) {
		f := setupLease(t)
		f.addJob(t, "hash", "normal", 0)
		if j, err := f.worker.ClaimJob(f.ctx, "w1", lease, "scan"); err != nil || j != nil {
			t.Fatalf("claim of scans only = %v, %v", j, err)
		}
		if j, err := f.worker.ClaimJob(f.ctx, "w1", lease, "hash"); err != nil || j == nil || j.Kind != "hash" {
			t.Fatalf("claim of hashes = %v, %v", j, err)
		}
	})
	t.Run("kinds workerd does not run stay untouched", func(t *testing.T) {
		f := setupLease(t)
		// Legal rows a third party may write with plain SQL: workerd runs
		// neither kind, so neither may be claimed nor failed.
		for _, kind := range []string{"delete", "thumbnail"} {
			f.exec(t, `INSERT INTO jobs (kind, status, priority, payload, created_at, updated_at)
				VALUES (?, 'pending', 'high', '{}', ?, ?)`, kind, protocol.FormatTime(f.clock.Now()), protocol.FormatTime(f.clock.Now()))
		}
		if j, err := f.worker.ClaimJob(f.ctx, "w1", lease); err != nil || j != nil {
			t.Fatalf("claim = %v, %v; want nothing", j, err)
		}
		if got := f.str(t, `SELECT `+storetest.Concat(`kind || ':' || status || ':' || coalesce(worker_id, '-')`, ",", "id")+` FROM jobs`); got != "delete:pending:-,thumbnail:pending:-" {
			t.Fatalf("rows = %s", got)
		}
	})
	t.Run("a hash job is told when a scan waits", func(t *testing.T) {
		f := setupLease(t)
		f.addJob(t, "hash", "normal", 0)
		j, _ := f.worker.ClaimJob(f.ctx, "w1", lease)
		if sig, err := f.worker.JobLeaseState(f.ctx, j.Fence()); err != nil || sig.ScanWaiting {
			t.Fatalf("signals before = %+v, %v", sig, err)
		}
		f.exec(t, `INSERT INTO scan_requests (kind, library_id, priority, reason, created_at, updated_at)
			VALUES ('hash', NULL, 'normal', 'x', ?, ?)`, protocol.FormatTime(f.clock.Now()), protocol.FormatTime(f.clock.Now()))
		if sig, err := f.worker.JobLeaseState(f.ctx, j.Fence()); err != nil || sig.ScanWaiting {
			t.Fatalf("signals with a hash queued = %+v, %v; only a scan makes a hash yield", sig, err)
		}
		lib := testfactory.Library(t, f.controlDB, nil)
		f.exec(t, `INSERT INTO scan_requests (kind, library_id, priority, reason, created_at, updated_at)
			VALUES ('scan', ?, 'normal', 'x', ?, ?)`, lib, protocol.FormatTime(f.clock.Now()), protocol.FormatTime(f.clock.Now()))
		if sig, err := f.worker.JobLeaseState(f.ctx, j.Fence()); err != nil || !sig.ScanWaiting || sig.CancelRequested {
			t.Fatalf("lease state = %+v, %v", sig, err)
		}
		if sig, err := f.worker.HeartbeatJob(f.ctx, j.Fence(), lease, leases.JobProgress{}); err != nil || !sig.ScanWaiting {
			t.Fatalf("heartbeat = %+v, %v", sig, err)
		}
	})
	t.Run("heartbeat progress cancel and finish", func(t *testing.T) {
		f := setupLease(t)
		id := f.addJob(t, "scan", "high", 0)
		j, _ := f.worker.ClaimJob(f.ctx, "w1", lease)
		f.clock.Advance(10 * time.Second)
		sig, err := f.worker.HeartbeatJob(f.ctx, j.Fence(), lease, leases.JobProgress{Processed: 5, Total: 20})
		if err != nil || sig.CancelRequested || sig.ScanWaiting {
			t.Fatalf("heartbeat = %+v, %v", sig, err)
		}
		if got := f.str(t, `SELECT lease_expires_at FROM jobs WHERE id = ?`, id); got != protocol.FormatTime(f.clock.Now().Add(lease)) {
			t.Fatalf("lease not extended: %s", got)
		}
		if p := f.str(t, `SELECT progress || '/' || processed_items || '/' || total_items FROM jobs WHERE id = ?`, id); p != "0.25/5/20" {
			t.Fatalf("progress %s", p)
		}
		if _, err := f.worker.HeartbeatJob(f.ctx, model.Fence{Table: model.LeaseJobs, ID: id, WorkerID: "w2", Epoch: j.LeaseEpoch}, lease, leases.JobProgress{}); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("foreign heartbeat err = %v", err)
		}
		f.exec(t, `UPDATE jobs SET cancel_requested = 1 WHERE id = ?`, id)
		if c, err := f.worker.JobLeaseState(f.ctx, j.Fence()); err != nil || !c.CancelRequested {
			t.Fatalf("lease state = %v, %v", c, err)
		}
		if c, err := f.worker.HeartbeatJob(f.ctx, j.Fence(), lease, leases.JobProgress{Processed: 6}); err != nil || !c.CancelRequested {
			t.Fatalf("heartbeat after cancel = %v, %v", c, err)
		}
		if err := f.worker.FinishJob(f.ctx, model.Fence{Table: model.LeaseJobs, ID: id, WorkerID: "w2", Epoch: j.LeaseEpoch}, leases.JobOutcome{Status: protocol.JobCompleted}); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("foreign finish err = %v", err)
		}
		err = f.worker.FinishJob(f.ctx, j.Fence(), leases.JobOutcome{Status: protocol.JobCancelled, ErrorCode: protocol.ErrCancelled, ErrorMessage: "cancel requested"})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.str(t, `SELECT status || ',' || error_code || ',' || coalesce(`+storetest.TimeText("lease_expires_at")+`, 'null') || ',' || worker_id FROM jobs WHERE id = ?`, id); got != "cancelled,cancelled,null,w1" {
			t.Fatalf("finished row %s", got)
		}
		if err := f.worker.FinishJob(f.ctx, j.Fence(), leases.JobOutcome{Status: protocol.JobCompleted}); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("second finish err = %v", err)
		}
		if err := f.worker.FinishJob(f.ctx, j.Fence(), leases.JobOutcome{Status: protocol.JobRunning}); err == nil {
			t.Fatal("non-terminal finish accepted")
		}
	})
	t.Run("stale lease recovered on claim path, live lease kept", func(t *testing.T) {
		f := setupLease(t)
		stale := f.addJob(t, "scan", "normal", 0)
		f.worker.ClaimJob(f.ctx, "w1", lease)
		live := f.addJob(t, "delete", "normal", 0)
		f.clock.Advance(lease - time.Second)
		f.worker.ClaimJob(f.ctx, "w2", lease, "delete") // claims live: nothing stale yet
		if n := f.num(t, `SELECT count(*) FROM jobs WHERE status = 'running'`); n != 2 {
			t.Fatalf("running = %d", n)
		}
		f.clock.Advance(2 * time.Second) // stale's lease passed; live's has not
		j, err := f.worker.ClaimJob(f.ctx, "w3", lease)
		if err != nil || j != nil {
			t.Fatalf("claim = %v, %v (retryable must not be claimed)", j, err)
		}
		if got := f.str(t, `SELECT status || ',' || error_code || ',' || error_message || ',' || coalesce(worker_id, 'null') FROM jobs WHERE id = ?`, stale); got != "retryable,lease_expired,"+protocol.LeaseExpiredMessage+",null" {
			t.Fatalf("stale row %s", got)
		}
		if got := f.str(t, `SELECT status || worker_id FROM jobs WHERE id = ?`, live); got != "runningw2" {
			t.Fatalf("live row %s", got)
		}
		if _, err := f.worker.HeartbeatJob(f.ctx, model.Fence{Table: model.LeaseJobs, ID: stale, WorkerID: "w1", Epoch: 1}, lease, leases.JobProgress{}); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("zombie heartbeat err = %v", err)
		}
		c, err := f.control.RecoverStale(f.ctx)
		if err != nil || c.Total() != 0 {
			t.Fatalf("second recovery = %+v, %v", c, err)
		}
	})
	t.Run("release on shutdown", func(t *testing.T) {
		f := setupLease(t)
		id := f.addJob(t, "hash", "normal", 0)
		j, _ := f.worker.ClaimJob(f.ctx, "w1", lease)
		if err := f.worker.ReleaseLease(f.ctx, j.Fence()); err != nil {
			t.Fatal(err)
		}
		if got := f.str(t, `SELECT status || ',' || error_code || ',' || coalesce(`+storetest.TimeText("lease_expires_at")+`, 'null') FROM jobs WHERE id = ?`, id); got != "retryable,worker_shutdown,null" {
			t.Fatalf("released %s", got)
		}
		if err := f.worker.ReleaseLease(f.ctx, j.Fence()); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("second release err = %v", err)
		}
	})
}

func TestRecoverStale(t *testing.T) {
	f := setupLease(t)
	j := f.addJob(t, "scan", "normal", 0)
	th := f.addThumb(t, 1, "g")
	cl := f.insert(t, `INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('h', ?, ?, ?) RETURNING id`, f.now(), f.now(), f.now())
	wl := f.insert(t, `INSERT INTO wal_maintenance_jobs (execute_after, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, f.now(), f.now(), f.now())
	for _, claim := range []func() (any, error){
		func() (any, error) { return f.worker.ClaimJob(f.ctx, "w", lease) },
		func() (any, error) { return f.worker.ClaimThumbnail(f.ctx, "w", lease) },
		func() (any, error) { return f.worker.ClaimCleanup(f.ctx, "w", lease) },
		func() (any, error) { return f.worker.ClaimCheckpoint(f.ctx, "w", lease) },
	} {
		if _, err := claim(); err != nil {
			t.Fatal(err)
		}
	}
	// A third party's row running without a lease is stale at once.
	nolease := f.addThumb(t, 2, "g")
	f.exec(t, `UPDATE thumbnails SET status = 'running', worker_id = 'ghost' WHERE id = ?`, nolease)
	c, err := f.control.RecoverStale(f.ctx)
	if err != nil || c != (leases.RecoverCounts{Thumbnails: 1}) {
		t.Fatalf("early recovery = %+v, %v", c, err)
	}
	f.clock.Advance(lease)
	c, err = f.control.RecoverStale(f.ctx)
	if err != nil || c != (leases.RecoverCounts{Jobs: 1, Thumbnails: 1, Cleanup: 1, WAL: 1}) {
		t.Fatalf("recovery = %+v, %v", c, err)
	}
	for q, want := range map[string]string{
		`SELECT status || coalesce(worker_id, '-') || coalesce(` + storetest.TimeText("lease_expires_at") + `, '-') FROM jobs WHERE id = ?`:                   "retryable--",
		`SELECT status || coalesce(worker_id, '-') || coalesce(` + storetest.TimeText("lease_expires_at") + `, '-') FROM thumbnails WHERE id = ?`:             "pending--",
		`SELECT status || coalesce(worker_id, '-') || coalesce(` + storetest.TimeText("lease_expires_at") + `, '-') FROM thumbnail_cleanup_jobs WHERE id = ?`: "pending--",
		`SELECT status || retry_count || error_code || ` + storetest.TimeText("retry_after") + ` FROM wal_maintenance_jobs WHERE id = ?`:                      "retryable1lease_expired" + protocol.FormatTime(f.clock.Now().Add(backoff.WAL(1))),
	} {
		var id int64
		switch {
		case strings.Contains(q, "FROM jobs"):
			id = j
		case strings.Contains(q, "FROM thumbnails"):
			id = th
		case strings.Contains(q, "cleanup"):
			id = cl
		default:
			id = wl
		}
		if got := f.str(t, q, id); got != want {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}
}

// rawDB is a plain handle on the database, as a third party holds.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := store.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
