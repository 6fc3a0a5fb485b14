package hashing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// observed passes a job to the real executor and reports how it ended.
type observed struct {
	engine.JobExecutor
	done chan error
}

func (o observed) Execute(ctx context.Context, job model.Job, rep engine.Reporter) (map[string]int64, error) {
	res, err := o.JobExecutor.Execute(ctx, job, rep)
	o.done <- err
	return res, err
}

// TestLostLeaseWritesNothingMore runs a real hash job in the engine and
// takes its lease away in the middle (DESIGN invariant 10): the lease
// expires while the second batch is read, and controld's sweep recovers
// the row. The first batch's digests, committed under the live lease,
// stay; nothing read after the loss is written, neither by the batch's
// commit nor by a flush past the cancel, and the row stays recovered.
func TestLostLeaseWritesNothingMore(t *testing.T) {
	t.Parallel()
	e := setup(t) // batches of 4 files
	for i := range 12 {
		e.addFile(t, fmt.Sprintf("f%02d.cbz", i), []byte(fmt.Sprintf("content of file %d", i)))
	}
	// setup claimed the job for direct runs: the engine claims it here.
	id := e.job.ID
	if _, err := storetest.Exec(e.ctx, e.control, `UPDATE jobs SET status = 'pending', worker_id = NULL, lease_expires_at = NULL
		WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	hashed := func() int64 {
		n, err := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM library_files WHERE content_hash IS NOT NULL`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var reads atomic.Int64
	lost := make(chan struct{})
	e.exec.afterRead = func(string) {
		if reads.Add(1) != 5 { // the first file of the second batch
			return
		}
		// The first batch is committed behind this read; then the lease
		// runs out (a heartbeat stalled) and the sweep recovers the row.
		for deadline := time.Now().Add(10 * time.Second); hashed() < 4 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE jobs SET lease_expires_at = '2000-01-01 00:00:00.000' WHERE id = ?`, id); err != nil {
			t.Error(err)
		}
		if c, err := leases.New(e.control).RecoverStale(e.ctx); err != nil || c.Jobs != 1 {
			t.Errorf("recover: %+v %v", c, err)
		}
		close(lost)
	}
	done := make(chan error, 1)
	eng, err := engine.New(e.worker, engine.Executors{Hash: observed{JobExecutor: e.exec, done: done}},
		engine.Config{WorkerID: "w1", Lease: 30 * time.Second, CancelCheck: 20 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(e.ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Run(ctx) }()
	defer func() {
		stop()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	}()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the hash job did not stop")
	}
	select {
	case <-lost:
	default:
		t.Fatalf("the job ended (%v) before its lease was taken away", runErr)
	}
	if runErr == nil || !(errors.Is(runErr, store.ErrNotOwner) || errors.Is(runErr, context.Canceled)) {
		t.Fatalf("executor returned %v, want the lost lease", runErr)
	}
	time.Sleep(100 * time.Millisecond) // anything still under way would land now
	if n := hashed(); n != 4 {
		t.Fatalf("%d digests stored, want the first batch's 4 only", n)
	}
	status, err := storetest.QueryText(e.ctx, e.control, `SELECT status || '|' || error_code FROM jobs WHERE id = ?`, id)
	// The worker is alive (its workers row is fresher than the lease the
	// test ran out), so the recovery is lease_lost: no attempt burnt.
	if err != nil || status != "retryable|lease_lost" {
		t.Fatalf("job %q %v, want it left recovered", status, err)
	}
}
