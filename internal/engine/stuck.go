package engine

import (
	"context"
	"time"
)

// stuckWatch times work that has a deadline (leased.deadline): the
// deadline itself, and, once the work's context is cancelled for any
// cause, how long the executor takes to return. Work without a deadline
// is not watched: its channels stay nil.
type stuckWatch struct {
	deadline  <-chan time.Time
	cancelled <-chan struct{} // the work's ctx.Done(), until it fires
	stuck     <-chan time.Time
	timers    []*time.Timer
}

func newStuckWatch(ctx context.Context, l leased) *stuckWatch {
	w := &stuckWatch{}
	if l.deadline <= 0 {
		return w
	}
	t := time.NewTimer(l.deadline)
	w.timers = append(w.timers, t)
	w.deadline, w.cancelled = t.C, ctx.Done()
	return w
}

// arm starts the stuck timer when the work's context is cancelled.
func (w *stuckWatch) arm(grace time.Duration) {
	w.cancelled = nil
	t := time.NewTimer(grace)
	w.timers = append(w.timers, t)
	w.stuck = t.C
}

func (w *stuckWatch) stop() {
	for _, t := range w.timers {
		t.Stop()
	}
}

// stuckWork reports work that two leases after its cancellation has not
// returned: no context reaches where it is (a C library's loop or lock),
// so only the process ending frees its lane and its lease (Config.OnStuck).
func (e *Engine) stuckWork(l leased) {
	e.log.Error("work did not stop two leases after it was cancelled: it is stuck where no cancellation reaches",
		"row", l.what, "id", l.id, "exiting", e.cfg.OnStuck != nil)
	if e.cfg.OnStuck != nil {
		e.cfg.OnStuck()
	}
}
