package engine

import (
	"context"
	"errors"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/protocol"
)

// leased describes how to keep one claimed row's lease alive.
type leased struct {
	what string
	id   int64
	// expires is the lease_expires_at the claim wrote, on the store's
	// clock: the first lease window ends there (leaseStart).
	expires *protocol.Time
	// beat is the heartbeat write; it returns the cause with which the
	// work must stop (jobs: errCancelRequested, errYieldRequested), or nil.
	beat func(ctx context.Context) (stop, err error)
	// poll is an optional read-only check between heartbeats, run every
	// cancel-check interval (jobs: their signals and ownership).
	poll func(ctx context.Context) (stop, err error)
	// deadline, when not zero, is how long the work may run before its
	// context is cancelled with errDeadline; such work is also watched
	// for being stuck (stuck).
	deadline time.Duration
}

// errDeadline cancels work that ran past its leased.deadline.
var errDeadline = errors.New("deadline passed")

// execute runs fn under the lease l: heartbeats every Lease/3, polls every
// cancel-check interval, and cancels fn's context with errCancelRequested,
// errYieldRequested, ErrLeaseLost, errDeadline (work with a deadline:
// stuckWatch) or (through workCtx) errShutdown. It
// returns the cause of that cancellation (nil when fn ended on its own) and
// fn's error.
//
// A lease is taken as lost when a heartbeat finds the row no longer ours,
// or when no heartbeat succeeded for a whole lease: the row may be
// recovered by now, so the work must stop. Heartbeats and polls run beside
// this loop, each with a deadline (a heartbeat's at 90% of the lease it
// extends, a poll's one lease away), so a statement stalled by a slow disk,
// another process's lock or a network that went away can delay neither
// that verdict nor the next check; and the store never extends an expired
// lease, so a heartbeat that lands late changes nothing.
func (e *Engine) execute(l leased, fn func(ctx context.Context) error) (cause, err error) {
	// The first window is read before fn starts: it must not wait on
	// anything fn does (the store's clock, on a stalled database).
	lastBeat := e.leaseStart(l.expires) // the claim wrote the first lease
	ctx, cancel := context.WithCancelCause(e.workCtx)
	defer cancel(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = safely(ctx, fn)
	}()
	beat := time.NewTicker(e.cfg.Lease / protocol.HeartbeatDivisor)
	defer beat.Stop()
	var pollC <-chan time.Time
	if l.poll != nil {
		pt := time.NewTicker(time.Duration(e.cancelCheck.Load()))
		defer pt.Stop()
		pollC = pt.C
	}
	lost := time.NewTimer(time.Until(lastBeat.Add(e.cfg.Lease)))
	defer lost.Stop()
	w := newStuckWatch(ctx, l)
	defer w.stop()
	type beatResult struct {
		start     time.Time
		stop, err error
	}
	beats := make(chan beatResult, 1)
	beating := false
	type pollResult struct{ stop, err error }
	polls := make(chan pollResult, 1)
	polling := false
	check := func(stop, cerr error) {
		switch {
		case errors.Is(cerr, store.ErrNotOwner):
			cancel(ErrLeaseLost)
		case cerr != nil:
			e.log.Warn("lease check failed", "row", l.what, "id", l.id, "err", cerr)
		case stop != nil:
			cancel(stop)
		}
	}
	for {
		select {
		case <-done:
			if ctx.Err() != nil {
				cause = context.Cause(ctx)
			}
			return cause, err
		case <-beat.C:
			if beating {
				continue // the last heartbeat is still stalled
			}
			beating = true
			start, deadline := time.Now(), lastBeat.Add(e.cfg.Lease*9/10)
			go func() {
				bctx, bcancel := context.WithDeadline(e.bgCtx(), deadline)
				defer bcancel()
				stop, berr := l.beat(bctx)
				beats <- beatResult{start: start, stop: stop, err: berr}
			}()
		case r := <-beats:
			beating = false
			if r.err == nil {
				lastBeat = r.start
				lost.Reset(time.Until(lastBeat.Add(e.cfg.Lease)))
			}
			check(r.stop, r.err)
		case <-lost.C:
			e.log.Warn("no heartbeat succeeded for a whole lease: work stopped", "row", l.what, "id", l.id)
			cancel(ErrLeaseLost)
		case <-pollC:
			if polling {
				continue
			}
			polling = true
			go func() {
				pctx, pcancel := context.WithTimeout(e.bgCtx(), e.cfg.Lease)
				defer pcancel()
				stop, perr := l.poll(pctx)
				polls <- pollResult{stop: stop, err: perr}
			}()
		case r := <-polls:
			polling = false
			check(r.stop, r.err)
		case <-w.deadline:
			w.deadline = nil
			e.log.Warn("work ran past its deadline: cancelled", "row", l.what, "id", l.id, "deadline", l.deadline)
			cancel(errDeadline)
		case <-w.cancelled:
			w.arm(2 * e.cfg.Lease)
		case <-w.stuck:
			w.stuck = nil
			e.stuckWork(l)
		}
	}
}

// leaseStart is the local instant (on the monotonic clock) at which the
// claim's lease began: one lease before expires, the lease_expires_at the
// claim wrote. The claim took its time from the store's clock (the
// database's, on PostgreSQL) before its UPDATE ran, and the row came back
// some time later: starting the first window at execute would let the
// work run that long past the database's lease, when recovery may already
// have given the row to another worker. The time left is read on the
// store's clock, so the host's wall clock plays no part; it is never more
// than a lease, and when nothing is left the lease is lost at once. With
// no expiry (or no store, in tests) the window starts now.
func (e *Engine) leaseStart(expires *protocol.Time) time.Time {
	now := time.Now()
	if expires == nil || e.st == nil {
		return now
	}
	left := min(expires.Sub(e.ls.Now()), e.cfg.Lease)
	return now.Add(left - e.cfg.Lease)
}

// bgCtx is for lease-path writes that must happen even while shutting down
// (heartbeats of work in its grace period, finishes, releases).
func (e *Engine) bgCtx() context.Context {
	return context.WithoutCancel(e.workCtx)
}

// persist writes a row's end, retrying while SQLite is busy for up to one
// lease; after that the lease expires and recovery takes the row back, so
// nothing is half-written. ErrNotOwner means the row is no longer ours
// (recovered, or its lease ran out): the result is dropped, as the
// protocol demands. It reports whether write succeeded.
func (e *Engine) persist(what string, id int64, write func(ctx context.Context) error) bool {
	ctx, cancel := context.WithTimeout(e.bgCtx(), e.cfg.Lease)
	defer cancel()
	pause := 50 * time.Millisecond
	for {
		err := write(ctx)
		switch {
		case err == nil:
			return true
		case errors.Is(err, store.ErrNotOwner):
			e.log.Warn("lease lost before the result was written; result dropped", "row", what, "id", id)
			return false
		case ctx.Err() != nil:
			e.log.Error("could not write result; the lease will expire and the row be recovered", "row", what, "id", id, "err", err)
			return false
		}
		e.log.Warn("write result failed; retrying", "row", what, "id", id, "err", err)
		sleep(ctx, jitter(pause))
		pause = min(pause*2, 2*time.Second)
	}
}

// safely runs fn, turning a panic into an executor_failed error so that
// one bad input cannot take the daemon down.
func safely(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = protocol.Errorf(protocol.ErrExecutorFailed, "executor panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(ctx)
}

// reporter is the Reporter of one job; the heartbeat reads its figures.
type reporter struct{ processed, total atomic.Int64 }

func (r *reporter) Progress(processed, total int64) {
	r.processed.Store(processed)
	r.total.Store(total)
}

func (r *reporter) snapshot() leases.JobProgress {
	return leases.JobProgress{Processed: r.processed.Load(), Total: r.total.Load()}
}

// errorFields renders an executor error as error_code and error_message.
func errorFields(err error, fallback string) (code, msg string) {
	code = protocol.CodeOf(err, fallback)
	msg = err.Error()
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Message != "" {
		msg = pe.Message
	}
	if len(msg) > 2000 {
		msg = msg[:2000]
	}
	return code, msg
}
