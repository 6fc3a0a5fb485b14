package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/engine/enginetest"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

type harness struct {
	t       *testing.T
	control *store.Store
	worker  *store.Store
	cancel  context.CancelFunc
	done    chan error
}

// testLease is the harness's lease: short, so that tests of lost leases
// finish quickly. On PostgreSQL each lease write is a round trip to a
// server that make test runs at nice 19 beside the other suites; under
// that load a 900 ms lease lapsed between a cover's render and its finish
// and the cover ran twice (at least once is the protocol's promise; these
// tests count exactly-once runs of a machine that keeps its leases).
func testLease() time.Duration {
	if storetest.Postgres() {
		return 3 * time.Second
	}
	return 900 * time.Millisecond
}

// setup opens a fresh database and starts an engine over ex with short
// timings; the engine is stopped (and its exit checked) when the test ends.
func setup(t *testing.T, ex engine.Executors, tweak func(*engine.Config)) *harness {
	t.Helper()
	control, worker, _ := storetest.MustOpenDB(t)
	cfg := engine.Config{
		WorkerID: "test-worker", Lease: testLease(), ThumbnailConcurrency: 2,
		ShutdownGrace: 5 * time.Second, CancelCheck: 50 * time.Millisecond,
		IdleMin: 10 * time.Millisecond, IdleMax: 50 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := engine.New(worker, ex, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, control: control, worker: worker, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- e.Run(ctx) }()
	t.Cleanup(func() { h.stop() })
	return h
}

// stop shuts the engine down and checks that Run returned nil.
func (h *harness) stop() {
	h.cancel()
	select {
	case err, ok := <-h.done:
		if ok && err != nil {
			h.t.Errorf("Run = %v", err)
		}
		if ok {
			close(h.done)
		}
	case <-time.After(20 * time.Second):
		h.t.Fatal("engine did not stop")
	}
}

func (h *harness) exec(q string, args ...any) {
	h.t.Helper()
	if _, err := storetest.Exec(context.Background(), h.control, q, args...); err != nil {
		h.t.Fatalf("exec %q: %v", q, err)
	}
}

// insert is exec for an `INSERT … RETURNING id`, returning the id.
func (h *harness) insert(q string, args ...any) int64 {
	h.t.Helper()
	id, err := storetest.InsertID(context.Background(), h.control, q, args...)
	if err != nil {
		h.t.Fatalf("insert %q: %v", q, err)
	}
	return id
}

func (h *harness) num(q string, args ...any) int64 {
	h.t.Helper()
	n, err := storetest.QueryInt(context.Background(), h.control, q, args...)
	if err != nil {
		h.t.Fatalf("query %q: %v", q, err)
	}
	return n
}

// waitFor polls cond (a count query that must reach want) until it holds.
func (h *harness) waitFor(want int64, q string, args ...any) {
	h.t.Helper()
	testutil.WaitForState(h.t, fmt.Sprintf("%s = %d", q, want), 15*time.Second, func() (bool, string) {
		got := h.num(q, args...)
		return got == want, fmt.Sprint(got)
	})
}

func (h *harness) job(kind, payload string) int64 {
	return h.insert(`INSERT INTO jobs (kind, payload, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id`,
		kind, payload, protocol.FormatTime(time.Now()), protocol.FormatTime(time.Now()))
}

func (h *harness) thumb(fileID int64) int64 {
	now := protocol.FormatTime(time.Now())
	return h.insert(`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (?, 1, 'g', 'x.webp', ?, ?) RETURNING id`, fileID, now, now)
}

func TestEngineRunsEveryLane(t *testing.T) {
	t.Parallel()
	noop := &enginetest.Noop{}
	h := setup(t, noop.Executors(), nil)
	now := protocol.FormatTime(time.Now())
	scan := h.job("scan", `{"force":true}`)
	for i := range 40 {
		h.thumb(int64(i))
	}
	h.exec(`INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('g', ?, ?, ?)`, now, now, now)
	h.exec(`INSERT INTO wal_maintenance_jobs (execute_after, created_at, updated_at) VALUES (?, ?, ?)`, now, now, now)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'completed' AND progress = 1 AND result = '{"files_seen":0}'
		AND processed_items = 1 AND total_items = 1`, scan) // final figures written even for a job shorter than a heartbeat
	h.waitFor(40, `SELECT count(*) FROM thumbnails WHERE status = 'ready' AND lease_expires_at IS NULL`)
	h.waitFor(1, `SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status = 'completed'`)
	h.waitFor(1, `SELECT count(*) FROM wal_maintenance_jobs WHERE status = 'completed'`)
	seen := map[string]int{}
	for _, r := range noop.Runs() {
		seen[r.Kind]++
	}
	if seen["scan"] != 1 || seen["thumbnail"] != 40 || seen["cleanup"] != 1 || seen["wal"] != 1 {
		t.Fatalf("executions %v", seen)
	}
	if n := h.num(`SELECT count(*) FROM workers WHERE worker_id = 'test-worker' AND stopped_at IS NULL`); n != 1 {
		t.Fatalf("worker not registered")
	}
	h.stop()
	if n := h.num(`SELECT count(*) FROM workers WHERE stopped_at IS NOT NULL`); n != 1 {
		t.Fatal("worker not marked stopped")
	}
}

func TestEngineRefusesBadRows(t *testing.T) {
	t.Parallel()
	noop := &enginetest.Noop{}
	h := setup(t, noop.Executors(), nil)
	bad := h.job("scan", `{"force":"yes","extra":1}`)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'failed' AND error_code = 'invalid_payload'`, bad)
	notJSON := h.job("hash", `not json`)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'failed' AND error_code = 'invalid_payload'`, notJSON)
	// A legal row of a kind workerd does not run is not a bad row: it is
	// left pending, untouched, for a worker that runs it.
	del := h.job("delete", `{}`)
	ok := h.job("scan", `{}`)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'completed'`, ok)
	if n := h.num(`SELECT count(*) FROM jobs WHERE id = ? AND status = 'pending' AND worker_id IS NULL AND error_code IS NULL`, del); n != 1 {
		t.Fatal("the delete row was touched by a worker that does not run deletes")
	}
	if len(noop.Runs()) != 1 {
		t.Fatalf("executor ran for refused rows: %+v", noop.Runs())
	}
}

func TestEngineCancel(t *testing.T) {
	t.Parallel()
	noop := &enginetest.Noop{Delay: time.Minute}
	h := setup(t, noop.Executors(), nil)
	id := h.job("scan", `{}`)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'`, id)
	asked := time.Now()
	h.exec(`UPDATE jobs SET cancel_requested = 1 WHERE id = ?`, id)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'cancelled' AND error_code = 'cancelled' AND lease_expires_at IS NULL`, id)
	if d := time.Since(asked); d > 2*time.Second {
		t.Fatalf("cancel observed after %v", d)
	}
	if r := noop.Runs(); len(r) != 1 || !errors.Is(r[0].Err, context.Canceled) {
		t.Fatalf("executor context not cancelled: %+v", r)
	}
}

// TestEngineHashYieldsToScan: a scan request queued while a hash job runs
// makes the hash job stop, keep what its executor returned, and complete
// with yielded=1, so that controld can promote the scan; a scan job is
// never stopped by another queued scan.
func TestEngineHashYieldsToScan(t *testing.T) {
	t.Parallel()
	noop := &enginetest.Noop{Delay: time.Minute}
	h := setup(t, noop.Executors(), nil)
	now := protocol.FormatTime(time.Now())
	lib := testfactory.Library(t, h.control, nil)
	queueScan := func() {
		h.exec(`INSERT INTO scan_requests (kind, library_id, priority, reason, created_at, updated_at)
			VALUES ('scan', ?, 'high', 'manual', ?, ?)`, lib, now, now)
	}
	// The harness fails the parent test, so the steps are not subtests.
	{ // a hash yields
		id := h.job("hash", `{}`)
		h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'`, id)
		asked := time.Now()
		queueScan()
		h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'completed' AND error_code IS NULL
			AND `+storetest.JSONTrue("result", protocol.ResultYielded)+` AND lease_expires_at IS NULL`, id)
		if d := time.Since(asked); d > 2*time.Second {
			t.Fatalf("yield observed after %v, want within 2 s", d)
		}
		if r := noop.Runs(); len(r) != 1 || !errors.Is(r[0].Err, context.Canceled) {
			t.Fatalf("executor context not cancelled: %+v", r)
		}
	}
	{ // a scan does not yield to a scan
		id := h.job("scan", `{}`)
		h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'`, id)
		ran := time.Now()
		for time.Since(ran) < 300*time.Millisecond { // six cancel checks
			if n := h.num(`SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'`, id); n != 1 {
				t.Fatal("a running scan stopped because another scan was queued")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestEngineLostLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	noop := &enginetest.Noop{Delay: time.Minute}
	h := setup(t, noop.Executors(), nil)
	id := h.thumb(1)
	h.waitFor(1, `SELECT count(*) FROM thumbnails WHERE id = ? AND status = 'running'`, id)
	// controld (or another worker) recovered the row and someone else owns it now.
	h.exec(`UPDATE thumbnails SET worker_id = 'other', lease_expires_at = '9999-01-01 00:00:00.000' WHERE id = ?`, id)
	testutil.WaitFor(t, "the executor cancelled after its lease was taken", 5*time.Second, func() bool { return len(noop.Runs()) > 0 })
	if r := noop.Runs(); !errors.Is(r[0].Err, context.Canceled) {
		t.Fatalf("run %+v", r)
	}
	h.stop()
	if n := h.num(`SELECT count(*) FROM thumbnails WHERE id = ? AND status = 'running' AND worker_id = 'other' AND finished_at IS NULL`, id); n != 1 {
		t.Fatal("a worker that lost its lease wrote to the row")
	}
}

func TestEngineGracefulShutdown(t *testing.T) {
	t.Parallel()
	t.Run("grace expires: cancel and release", func(t *testing.T) {
		t.Parallel()
		noop := &enginetest.Noop{Delay: time.Minute}
		h := setup(t, noop.Executors(), func(c *engine.Config) { c.ShutdownGrace = 200 * time.Millisecond })
		j := h.job("hash", `{}`)
		th := h.thumb(1)
		h.waitFor(2, `SELECT (SELECT count(*) FROM jobs WHERE status = 'running') + (SELECT count(*) FROM thumbnails WHERE status = 'running')`)
		start := time.Now()
		h.stop()
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("shutdown took %v", d)
		}
		if n := h.num(`SELECT count(*) FROM jobs WHERE id = ? AND status = 'retryable' AND error_code = 'worker_shutdown' AND worker_id IS NULL`, j); n != 1 {
			t.Fatal("job not released")
		}
		if n := h.num(`SELECT count(*) FROM thumbnails WHERE id = ? AND status = 'pending' AND worker_id IS NULL`, th); n != 1 {
			t.Fatal("thumbnail not released")
		}
	})
	t.Run("work inside the grace completes", func(t *testing.T) {
		t.Parallel()
		noop := &enginetest.Noop{Delay: 300 * time.Millisecond}
		h := setup(t, noop.Executors(), nil)
		j := h.job("scan", `{}`)
		h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'`, j)
		h.stop()
		if n := h.num(`SELECT count(*) FROM jobs WHERE id = ? AND status = 'completed'`, j); n != 1 {
			t.Fatal("job did not complete within the grace period")
		}
	})
}

// failing executors: coded errors, plain errors, panics, busy checkpoints.
type failing struct{}

func (f *failing) Execute(context.Context, model.Job, engine.Reporter) (map[string]int64, error) {
	panic("boom")
}
func (f *failing) Render(_ context.Context, t model.Thumbnail) (engine.ThumbnailResult, error) {
	if t.FileID == 1 {
		return engine.ThumbnailResult{}, protocol.Errorf(protocol.ErrDecodeError, "not an image")
	}
	return engine.ThumbnailResult{}, errors.New("plain failure")
}
func (f *failing) Clean(context.Context, model.CleanupJob) (int64, int64, error) {
	return 2, 1, protocol.Errorf(protocol.ErrIOError, "disk gone")
}
func (f *failing) Checkpoint(context.Context, model.WALJob) (engine.CheckpointResult, error) {
	return engine.CheckpointResult{Busy: 1, LogFrames: 9, CheckpointedFrames: 3}, nil
}

func TestEngineFailures(t *testing.T) {
	t.Parallel()
	f := &failing{}
	h := setup(t, engine.Executors{Scan: f, Hash: f, Thumbnail: f, Cleanup: f, Checkpoint: f}, nil)
	now := protocol.FormatTime(time.Now())
	j := h.job("scan", `{}`)
	h.thumb(1)
	h.thumb(2)
	h.exec(`INSERT INTO thumbnail_cleanup_jobs (group_key, execute_after, created_at, updated_at) VALUES ('other', ?, ?, ?)`, now, now, now)
	h.exec(`INSERT INTO wal_maintenance_jobs (execute_after, created_at, updated_at) VALUES (?, ?, ?)`, now, now, now)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'failed' AND error_code = 'executor_failed' AND error_message LIKE 'executor panic: boom%'`, j)
	h.waitFor(1, `SELECT count(*) FROM thumbnails WHERE file_id = 1 AND status = 'failed' AND error_code = 'decode_error' AND error_message = 'not an image' AND retry_after IS NOT NULL`)
	h.waitFor(1, `SELECT count(*) FROM thumbnails WHERE file_id = 2 AND status = 'failed' AND error_code = 'executor_failed'`)
	h.waitFor(1, `SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status = 'failed' AND error_code = 'io_error' AND deleted_files = 2`)
	h.waitFor(1, `SELECT count(*) FROM wal_maintenance_jobs WHERE status = 'retryable' AND error_code = 'checkpoint_busy' AND retry_count = 1 AND checkpoint_log_frames = 9`)
}

// expiring is a scan executor whose work outlives its lease: it moves the
// row's lease_expires_at into the past, as time would, and then succeeds.
type expiring struct {
	control atomic.Pointer[store.Store]
	ran     atomic.Bool
}

func (x *expiring) Execute(ctx context.Context, job model.Job, _ engine.Reporter) (map[string]int64, error) {
	defer x.ran.Store(true)
	_, err := storetest.Exec(ctx, x.control.Load(), `UPDATE jobs SET lease_expires_at = ? WHERE id = ?`,
		protocol.FormatTime(time.Now().Add(-time.Second)), job.ID)
	return map[string]int64{"files": 1}, err
}

// TestEngineRefusedFinalHeartbeatWritesNothing: when the heartbeat that
// carries a finished job's last figures is refused (its lease ran out),
// the result is dropped, as the log says: the job is not written
// completed; it stays running until recovery takes it back (the engine's
// own next claim may do that at once).
func TestEngineRefusedFinalHeartbeatWritesNothing(t *testing.T) {
	t.Parallel()
	x := &expiring{}
	h := setup(t, engine.Executors{Scan: x}, nil)
	x.control.Store(h.control)
	id := h.job("scan", `{}`)
	testutil.WaitFor(t, "the executor ran", 10*time.Second, x.ran.Load)
	h.stop()
	if n := h.num(`SELECT count(*) FROM jobs WHERE id = ? AND status IN ('running','retryable') AND result IS NULL AND finished_at IS NULL`, id); n != 1 {
		st, _ := storetest.QueryText(context.Background(), h.control, `SELECT status FROM jobs WHERE id = ?`, id)
		t.Fatalf("job %d is %s: a worker whose final heartbeat was refused wrote its result", id, st)
	}
}
