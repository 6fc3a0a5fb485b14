package engine

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// renderFunc is a ThumbnailExecutor made of a function.
type renderFunc func(ctx context.Context, t model.Thumbnail) (ThumbnailResult, error)

func (f renderFunc) Render(ctx context.Context, t model.Thumbnail) (ThumbnailResult, error) {
	return f(ctx, t)
}

// inClaimTx reports whether the caller runs inside a claim's write
// transaction (the closure of leases.(*Leases).claim that reads the claim's
// time).
func inClaimTx() bool {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "internal/store/leases.(*Leases).claim.func") {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestFirstLeaseWindowFromClaim: the claim's time is read before its
// UPDATE runs, and the row comes back later still; the first lease window
// ends where the database's lease ends, not one lease after execute began.
// The claim is made slow here (its time is read, then 60% of a lease
// passes), then the database stops answering: the work must stop when the
// row's lease_expires_at passes, 40% of a lease after it began.
func TestFirstLeaseWindowFromClaim(t *testing.T) {
	const lease = 1500 * time.Millisecond
	const late = lease * 6 / 10
	var armed, stalled atomic.Bool
	release := make(chan struct{})
	clock := func() time.Time {
		if stalled.Load() {
			<-release // the database stopped answering
		}
		now := time.Now()
		if inClaimTx() && armed.CompareAndSwap(true, false) {
			time.Sleep(late) // the claim's UPDATE, slow after its time was read
		}
		return now
	}
	path := storetest.MustMigrate(t)
	control := storetest.MustOpen(t, path, store.RoleControl, time.Now)
	worker := storetest.MustOpen(t, path, store.RoleWorker, clock)
	t.Cleanup(func() { close(release) })
	ctx := context.Background()
	if _, err := storetest.InsertID(ctx, control, `INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (1, 1, 'g', 'x.webp', ?1, ?1) RETURNING id`, protocol.FormatTime(control.Now())); err != nil {
		t.Fatal(err)
	}
	type span struct{ start, stop time.Time }
	out := make(chan span, 1)
	e, err := New(worker, Executors{Thumbnail: renderFunc(func(ctx context.Context, _ model.Thumbnail) (ThumbnailResult, error) {
		s := span{start: time.Now()}
		stalled.Store(true)
		<-ctx.Done()
		s.stop = time.Now()
		out <- s
		return ThumbnailResult{}, context.Cause(ctx)
	})}, Config{WorkerID: "w", Lease: lease, CancelCheck: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	e.workCtx, e.cancelWork = context.WithCancelCause(context.Background())
	defer e.cancelWork(errShutdown)
	armed.Store(true)
	go func() { _, _ = e.thumbnailOnce(false)(ctx) }()
	select {
	case s := <-out:
		if armed.Load() {
			t.Fatal("the claim was not slowed down: the test no longer models a late claim")
		}
		// The database's lease ends lease−late (600 ms) after the work
		// began; allow 600 ms for a loaded machine under -race, well short
		// of the whole lease (1.5 s) that the window took before.
		if took := s.stop.Sub(s.start); took > lease-late+600*time.Millisecond {
			t.Fatalf("work stopped %v after it began; the claim's lease ended %v after", took, lease-late)
		}
	case <-time.After(10 * lease):
		t.Fatal("work never stopped")
	}
}
