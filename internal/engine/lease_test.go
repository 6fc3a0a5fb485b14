package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestExecuteStalledDatabase: when the database stops answering (a network
// that went away: statements hang in a dial or a read), the work stops once
// a lease has passed without a heartbeat, however long the stalled
// heartbeats and polls take to fail. The store's statements are replaced
// here because a real network stall is what internal/chaos's scale-out test
// provides; this pins the timing that test once caught (a poll run in the
// loop held the verdict back until its dials gave up, 10 s on a 3 s lease).
func TestExecuteStalledDatabase(t *testing.T) {
	const lease = 300 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stall := func(ctx context.Context) (error, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("dial tcp: connect: no route to host")
	}
	for _, tc := range []struct {
		name       string
		beat, poll func(ctx context.Context) (error, error)
	}{
		{"heartbeats stall", stall, nil},
		{"heartbeats and polls stall", stall, stall},
		{"heartbeats fail at once, polls stall", func(context.Context) (error, error) {
			return nil, errors.New("connect: connection refused")
		}, stall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{cfg: Config{Lease: lease}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			e.workCtx, e.cancelWork = context.WithCancelCause(context.Background())
			defer e.cancelWork(errShutdown)
			e.cancelCheck.Store(int64(20 * time.Millisecond))
			start := time.Now()
			type result struct{ cause, err error }
			out := make(chan result, 1)
			go func() {
				cause, err := e.execute(leased{what: "job", id: 1, beat: tc.beat, poll: tc.poll}, func(ctx context.Context) error {
					<-ctx.Done()
					return ctx.Err()
				})
				out <- result{cause, err}
			}()
			select {
			case r := <-out:
				if !errors.Is(r.cause, ErrLeaseLost) {
					t.Fatalf("execute = %v, %v; want the lease taken as lost", r.cause, r.err)
				}
				// The timer fires one lease after the claim; allow the
				// scheduler three leases more under -race on a loaded
				// machine (the stalls themselves would last until release).
				if took := time.Since(start); took < lease || took > 4*lease {
					t.Fatalf("work stopped %v after the last heartbeat; want one lease (%v)", took, lease)
				}
			case <-time.After(10 * lease):
				t.Fatalf("work still running %v after the database stalled (lease %v)", 10*lease, lease)
			}
		})
	}
}
