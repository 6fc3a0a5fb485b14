package walmaint_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/internal/backoff"
	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/walmaint"
	"github.com/bindery-nas/bindery/protocol"
)

type env struct {
	ctx     context.Context
	control *store.Store
	worker  *store.Store
	clock   *storetest.Clock
	path    string
	raw     *sql.DB
}

// setup migrates a database, opens it as controld and as workerd (the
// executor runs on the worker store, under its authorizer) and as a plain
// third-party connection that writes filler rows and reads pragmas.
func setup(t *testing.T) *env {
	t.Helper()
	db := storetest.MustOpenClockedDB(t)
	raw, err := sql.Open("sqlite3", "file:"+db.Path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Exec(`CREATE TABLE filler (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	return &env{ctx: context.Background(), control: db.Control, worker: db.Worker, clock: db.Clock, path: db.Path, raw: raw}
}

func (e *env) fill(t *testing.T, rows int) {
	t.Helper()
	for range rows {
		if _, err := e.raw.Exec(`INSERT INTO filler VALUES (randomblob(4096))`); err != nil {
			t.Fatal(err)
		}
	}
}

// runOnce acts as the engine: claim a due row, execute, finish it the way
// the engine does (busy → RetryCheckpoint, else SucceedCheckpoint).
// after, when given, runs between the checkpoint and the finish write.
func (e *env) runOnce(t *testing.T, ex *walmaint.Executor, after ...func(engine.CheckpointResult)) (*model.WALJob, engine.CheckpointResult) {
	t.Helper()
	w, err := leases.New(e.worker).ClaimCheckpoint(e.ctx, "w1", time.Minute)
	if err != nil || w == nil {
		t.Fatalf("claim: %+v %v", w, err)
	}
	res, err := ex.Checkpoint(e.ctx, *w)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	for _, f := range after {
		f(res)
	}
	fig := leases.CheckpointFigures{Busy: res.Busy, LogFrames: res.LogFrames, CheckpointedFrames: res.CheckpointedFrames}
	if res.Busy > 0 {
		err = leases.New(e.worker).RetryCheckpoint(e.ctx, w.Fence(), fig, protocol.ErrCheckpointBusy, "readers or writers kept the checkpoint from finishing", 5)
	} else {
		err = leases.New(e.worker).SucceedCheckpoint(e.ctx, w.Fence(), fig)
	}
	if err != nil {
		t.Fatal(err)
	}
	row, err := e.control.CheckpointByID(e.ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	return &row, res
}

func directCheckpoint(t *testing.T, db *sql.DB, mode string) (busy, log, done int64) {
	t.Helper()
	if err := db.QueryRow(`PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &done); err != nil {
		t.Fatal(err)
	}
	return
}

func TestExecutor(t *testing.T) {
	t.Run("passive figures match a direct pragma read", func(t *testing.T) {
		e := setup(t)
		e.fill(t, 50)
		if _, _, err := e.control.EnqueueCheckpoint(e.ctx, protocol.CheckpointPassive, "test", true, 0); err != nil {
			t.Fatal(err)
		}
		var direct [3]int64
		row, res := e.runOnce(t, walmaint.New(e.worker, walmaint.Config{}), func(engine.CheckpointResult) {
			// nothing was written since: a direct read sees the same WAL
			direct[0], direct[1], direct[2] = directCheckpoint(t, e.raw, "PASSIVE")
		})
		if row.Status != "completed" || res.Busy != 0 || res.LogFrames < 50 || res.CheckpointedFrames != res.LogFrames {
			t.Fatalf("row %s figures %+v", row.Status, res)
		}
		recorded := [3]int64{model.Deref(row.CheckpointBusy), model.Deref(row.CheckpointLogFrames), model.Deref(row.CheckpointedFrames)}
		if direct != recorded {
			t.Fatalf("direct %v vs recorded %v", direct, recorded)
		}
	})
	t.Run("a long-lived reader makes truncate busy, retryable, then it completes", func(t *testing.T) {
		e := setup(t)
		e.fill(t, 20)
		reader, err := sql.Open("sqlite3", "file:"+e.path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		rtx, err := reader.Begin()
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := rtx.QueryRow(`SELECT count(*) FROM filler`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		e.fill(t, 20) // frames newer than the reader's snapshot
		if _, _, err := e.control.EnqueueCheckpoint(e.ctx, protocol.CheckpointTruncate, "test", true, 0); err != nil {
			t.Fatal(err)
		}
		ex := walmaint.New(e.worker, walmaint.Config{BusyTimeout: 100 * time.Millisecond})
		row, res := e.runOnce(t, ex)
		if res.Busy != 1 || row.Status != "retryable" || row.RetryCount != 1 || (row.RetryAfter == nil) ||
			model.Deref(row.ErrorCode) != protocol.ErrCheckpointBusy || model.Deref(row.CheckpointBusy) != 1 {
			t.Fatalf("with reader: %+v figures %+v", row, res)
		}
		if wait := row.RetryAfter.Sub(e.clock.Now()); wait != backoff.WAL(1) {
			t.Fatalf("backoff %v, want %v", wait, backoff.WAL(1))
		}
		if w, _ := leases.New(e.worker).ClaimCheckpoint(e.ctx, "w1", time.Minute); w != nil {
			t.Fatal("claimed before retry_after")
		}
		if err := rtx.Rollback(); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(backoff.WAL(1))
		var direct [3]int64
		row, res = e.runOnce(t, ex, func(engine.CheckpointResult) {
			direct[0], direct[1], direct[2] = directCheckpoint(t, e.raw, "TRUNCATE")
		})
		if res.Busy != 0 || row.Status != "completed" || row.RetryCount != 1 {
			t.Fatalf("after reader: %+v figures %+v", row, res)
		}
		recorded := [3]int64{model.Deref(row.CheckpointBusy), model.Deref(row.CheckpointLogFrames), model.Deref(row.CheckpointedFrames)}
		if direct != recorded || recorded != [3]int64{0, 0, 0} {
			t.Fatalf("direct %v vs recorded %v (a finished truncate leaves an empty WAL)", direct, recorded)
		}
	})
	t.Run("execution error is checkpoint_failed", func(t *testing.T) {
		e := setup(t)
		ex := walmaint.New(e.worker, walmaint.Config{})
		_, err := ex.Checkpoint(e.ctx, model.WALJob{ID: 9, RequestedMode: "FULL"})
		if protocol.CodeOf(err, "") != protocol.ErrCheckpointFailed {
			t.Fatalf("bad mode: %v", err)
		}
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err = ex.Checkpoint(ctx, model.WALJob{ID: 9, RequestedMode: "passive"})
		if protocol.CodeOf(err, "") != protocol.ErrCheckpointFailed {
			t.Fatalf("cancelled: %v", err)
		}
	})
}
