package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

type queueEnv struct {
	ctx   context.Context
	st    *store.Store
	clock *storetest.Clock
	path  string
	libs  []int64
}

// setupQueue opens a fresh database with n libraries and a settable clock.
func setupQueue(t *testing.T, n int) *queueEnv {
	t.Helper()
	path := storetest.MustMigrate(t)
	clock := storetest.NewClock()
	st := storetest.MustOpen(t, path, store.RoleControl, clock.Now)
	e := &queueEnv{ctx: context.Background(), st: st, clock: clock, path: path}
	for i := range n {
		e.libs = append(e.libs, mustLibrary(t, st, fmt.Sprintf("/libraries/l%d", i)))
	}
	return e
}

func mustLibrary(t *testing.T, st *store.Store, path string) int64 {
	t.Helper()
	return testfactory.Library(t, st, &testfactory.LibraryOpts{Name: path, Path: path, CreatedAt: st.Now()})
}

func lib(id int64) *int64 { return &id }

func (e *queueEnv) request(t *testing.T, kind protocol.JobKind, libID int64, prio protocol.Priority) queue.RequestOutcome {
	t.Helper()
	var l *int64
	if libID != 0 {
		l = lib(libID)
	}
	out, err := queue.New(e.st).RequestJob(e.ctx, queue.JobRequest{Kind: kind, LibraryID: l, Priority: prio, Reason: "test"})
	if err != nil {
		t.Fatalf("request %s %d: %v", kind, libID, err)
	}
	return out
}

// finish acts as a worker: the active scan/hash job ends.
func (e *queueEnv) finish(t *testing.T, jobID int64, status protocol.JobStatus) {
	t.Helper()
	now := protocol.FormatTime(e.st.Now())
	res, err := storetest.Exec(e.ctx, e.st, `UPDATE jobs SET status = ?, finished_at = ?, updated_at = ? WHERE id = ?`,
		string(status), now, now, jobID)
	if err != nil {
		t.Fatalf("finish job %d: %v", jobID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("finish job %d: %d rows", jobID, n)
	}
}

func queueTargets(t *testing.T, st *store.Store) []string {
	t.Helper()
	q, err := queue.New(st).ListQueue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range q {
		out = append(out, fmt.Sprintf("%s:%d:%s", r.Kind, *r.LibraryID, r.Priority))
	}
	return out
}

func TestRequestJob(t *testing.T) {
	t.Run("first request takes the free slot", func(t *testing.T) {
		e := setupQueue(t, 1)
		out := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh)
		if !out.Created || out.Job == nil || out.Queued != nil {
			t.Fatalf("outcome %+v", out)
		}
		if out.Job.Status != "pending" || out.Job.Kind != "scan" || out.Job.Library() != e.libs[0] || out.Job.Priority != "high" {
			t.Fatalf("job %+v", out.Job)
		}
	})
	t.Run("duplicate returns the active job", func(t *testing.T) {
		e := setupQueue(t, 1)
		first := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
		again := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh)
		if again.Created || again.Job == nil || again.Job.ID != first.Job.ID {
			t.Fatalf("again %+v, first job %d", again, first.Job.ID)
		}
		if q := queueTargets(t, e.st); len(q) != 0 {
			t.Fatalf("queue %v", q)
		}
	})
	t.Run("busy slot queues in priority then FIFO order", func(t *testing.T) {
		e := setupQueue(t, 5)
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
		var positions []int
		for i, p := range []protocol.Priority{protocol.PriorityNormal, protocol.PriorityHigh, protocol.PriorityNormal, protocol.PriorityHigh} {
			e.clock.Advance(time.Second)
			out := e.request(t, protocol.JobKindScan, e.libs[i+1], p)
			if out.Job != nil || out.Queued == nil || !out.Created { // a new entry
				t.Fatalf("outcome %+v", out)
			}
			positions = append(positions, out.Position)
		}
		if fmt.Sprint(positions) != "[1 1 3 2]" {
			t.Fatalf("positions at request time %v", positions)
		}
		want := fmt.Sprintf("[scan:%d:high scan:%d:high scan:%d:normal scan:%d:normal]", e.libs[2], e.libs[4], e.libs[1], e.libs[3])
		if got := fmt.Sprint(queueTargets(t, e.st)); got != want {
			t.Fatalf("queue %s, want %s", got, want)
		}
	})
	t.Run("duplicate entry is returned and high upgrades normal", func(t *testing.T) {
		e := setupQueue(t, 3)
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
		e.clock.Advance(time.Second)
		e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityHigh)
		e.clock.Advance(time.Second)
		n1 := e.request(t, protocol.JobKindScan, e.libs[2], protocol.PriorityNormal)
		n2 := e.request(t, protocol.JobKindScan, e.libs[2], protocol.PriorityNormal)
		if n2.Queued.ID != n1.Queued.ID || n2.Position != 2 || n2.Queued.Priority != "normal" {
			t.Fatalf("dup normal %+v / %+v", n1.Queued, n2.Queued)
		}
		up := e.request(t, protocol.JobKindScan, e.libs[2], protocol.PriorityHigh)
		if up.Queued.ID != n1.Queued.ID || up.Queued.Priority != "high" || up.Position != 2 {
			t.Fatalf("upgrade %+v pos %d", up.Queued, up.Position)
		}
		// high never downgrades
		down := e.request(t, protocol.JobKindScan, e.libs[2], protocol.PriorityNormal)
		if down.Queued.Priority != "high" {
			t.Fatalf("downgraded: %+v", down.Queued)
		}
		if n := len(queueTargets(t, e.st)); n != 2 {
			t.Fatalf("queue has %d entries", n)
		}
	})
	t.Run("scan and hash of one library are separate targets", func(t *testing.T) {
		e := setupQueue(t, 1)
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
		h := e.request(t, protocol.JobKindHash, e.libs[0], protocol.PriorityNormal)
		all := e.request(t, protocol.JobKindHash, 0, protocol.PriorityNormal)
		all2 := e.request(t, protocol.JobKindHash, 0, protocol.PriorityHigh)
		if h.Queued == nil || all.Queued == nil || all.Queued.LibraryID != nil || all2.Queued.ID != all.Queued.ID {
			t.Fatalf("hash %+v all %+v all2 %+v", h, all, all2)
		}
	})
	t.Run("validation", func(t *testing.T) {
		e := setupQueue(t, 1)
		bad := []queue.JobRequest{
			{Kind: protocol.JobKindScan, Priority: protocol.PriorityHigh},
			{Kind: protocol.JobKindThumbnail, LibraryID: lib(e.libs[0]), Priority: protocol.PriorityHigh},
			{Kind: protocol.JobKindScan, LibraryID: lib(e.libs[0]), Priority: "HIGH"},
		}
		for _, r := range bad {
			if _, err := queue.New(e.st).RequestJob(e.ctx, r); !errors.Is(err, store.ErrInvalidRequest) {
				t.Errorf("%+v: err %v", r, err)
			}
		}
		_, err := queue.New(e.st).RequestJob(e.ctx, queue.JobRequest{Kind: protocol.JobKindScan, LibraryID: lib(999), Priority: protocol.PriorityHigh})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown library: %v", err)
		}
		if n, _ := storetest.QueryInt(e.ctx, e.st, `SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM scan_requests)`); n != 0 {
			t.Fatalf("%d rows written by refused requests", n)
		}
	})
}

func TestQueueCancelAndPromote(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		e := setupQueue(t, 3)
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
		q1 := e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityNormal)
		e.request(t, protocol.JobKindScan, e.libs[2], protocol.PriorityNormal)
		if err := queue.New(e.st).CancelQueueEntry(e.ctx, q1.Queued.ID); err != nil {
			t.Fatal(err)
		}
		if err := queue.New(e.st).CancelQueueEntry(e.ctx, q1.Queued.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second cancel: %v", err)
		}
		if got := queueTargets(t, e.st); len(got) != 1 || got[0] != fmt.Sprintf("scan:%d:normal", e.libs[2]) {
			t.Fatalf("queue %v", got)
		}
	})
	t.Run("promotion waits for the slot", func(t *testing.T) {
		e := setupQueue(t, 2)
		first := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
		e.request(t, protocol.JobKindHash, e.libs[1], protocol.PriorityHigh)
		if j, err := queue.New(e.st).PromoteQueueHead(e.ctx); err != nil || j != nil {
			t.Fatalf("promoted while busy: %+v %v", j, err)
		}
		e.finish(t, first.Job.ID, protocol.JobCompleted)
		j, err := queue.New(e.st).PromoteQueueHead(e.ctx)
		if err != nil || j == nil || j.Kind != "hash" || j.Library() != e.libs[1] || j.Priority != "high" || j.Status != "pending" {
			t.Fatalf("promote: %+v %v", j, err)
		}
		if q := queueTargets(t, e.st); len(q) != 0 {
			t.Fatalf("queue %v", q)
		}
		if j, err := queue.New(e.st).PromoteQueueHead(e.ctx); err != nil || j != nil {
			t.Fatalf("empty queue promoted %+v %v", j, err)
		}
	})
	t.Run("a third party holding the slot makes promotion a no-op", func(t *testing.T) {
		e := setupQueue(t, 2)
		e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
		e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityNormal)
		// the active job is retried by someone else (retryable → running)
		if _, err := storetest.Exec(e.ctx, e.st, `UPDATE jobs SET status = 'running'`); err != nil {
			t.Fatal(err)
		}
		if j, err := queue.New(e.st).PromoteQueueHead(e.ctx); err != nil || j != nil {
			t.Fatalf("promote %+v %v", j, err)
		}
		if len(queueTargets(t, e.st)) != 1 {
			t.Fatal("entry lost")
		}
	})
	t.Run("concurrent requests and promotions keep one active job", func(t *testing.T) {
		e := setupQueue(t, 8)
		other := storetest.MustOpen(t, e.path, store.RoleControl, e.clock.Now)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i, l := range e.libs {
			st := e.st
			if i%2 == 1 {
				st = other
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := queue.New(st).RequestJob(e.ctx, queue.JobRequest{Kind: protocol.JobKindScan, LibraryID: lib(l), Priority: protocol.PriorityNormal})
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_, err := queue.New(st).PromoteQueueHead(e.ctx)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		jobs, _ := storetest.QueryInt(e.ctx, e.st, `SELECT count(*) FROM jobs`)
		queued, _ := storetest.QueryInt(e.ctx, e.st, `SELECT count(*) FROM scan_requests`)
		if jobs != 1 || queued != 7 {
			t.Fatalf("jobs %d queued %d, want 1 and 7", jobs, queued)
		}
	})
}
