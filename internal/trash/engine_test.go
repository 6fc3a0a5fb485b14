package trash

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// TestCancelAfterCrashThroughTheEngine is hole 6 with workerd's engine and
// controld's store paths: a worker is killed between moving a copy and
// recording it, recovery hands the job back, the operator cancels it, and
// the retry service promotes it. The engine claims the flagged job, the
// executor settles the intent from the disk, and only then does the job
// end cancelled: the copy is recorded trashed and restores.
func TestCancelAfterCrashThroughTheEngine(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
	job := e.claim(e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash))
	e.killedAfterMove(job, "b.cbz")
	// kill -9 now. The lease runs out and controld recovers the row.
	e.exec(`UPDATE jobs SET lease_expires_at = '2000-01-01 00:00:00.000' WHERE id = ?`, job.ID)
	if c, err := leases.New(e.control).RecoverStale(e.ctx); err != nil || c.Jobs != 1 {
		t.Fatalf("recover: %+v %v", c, err)
	}
	cancelled, err := queue.New(e.control).CancelJob(e.ctx, job.ID)
	e.must(err)
	if cancelled.Status.Terminal() {
		t.Fatal("the cancel ended a job whose intent nobody settled")
	}
	// The retry service stamps a retry time, and requeues the row once it
	// is due, cancel requested or not.
	if _, _, err := leases.New(e.control).RequeueRetryableJobs(e.ctx, 5); err != nil {
		t.Fatal(err)
	}
	e.exec(`UPDATE jobs SET retry_after = '2000-01-01 00:00:00.000' WHERE id = ?`, job.ID)
	if n, _, err := leases.New(e.control).RequeueRetryableJobs(e.ctx, 5); err != nil || n != 1 {
		t.Fatalf("requeue: %d %v", n, err)
	}
	eng, err := engine.New(e.worker, engine.Executors{Delete: e.x},
		engine.Config{WorkerID: "w2", Lease: 30 * time.Second, CancelCheck: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	e.must(err)
	ctx, stop := context.WithCancel(e.ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Run(ctx) }()
	testutil.WaitFor(t, "the job to end", 30*time.Second, func() bool {
		j, err := queue.New(e.control).GetJob(e.ctx, job.ID)
		return err == nil && j.Status.Terminal()
	})
	stop()
	e.must(<-stopped)
	j, err := queue.New(e.control).GetJob(e.ctx, job.ID)
	e.must(err)
	if j.Status != protocol.JobCancelled || e.outcomes(job)["b.cbz"] != protocol.OutcomeTrashed {
		t.Fatalf("job %s, outcomes %v", j.Status, e.outcomes(job))
	}
	restore, err := duplicates.New(e.control).CreateRestore(e.ctx, job.ID, nil)
	e.must(err)
	if _, err := e.run(restore); err != nil || e.read("b.cbz") != "same" {
		t.Fatalf("restore: %v", err)
	}
}
