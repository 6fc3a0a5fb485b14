package engine

import (
	"context"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/store/feed"
)

// wakes tells idle lanes that another connection committed (a job was
// requested, a cover admitted), so that they claim at once instead of
// sleeping out their backoff (IdleMin doubling to IdleMax, up to a second
// after a job was requested). watchChanges asks the store's change watcher
// every WakeInterval: on SQLite PRAGMA data_version on a connection of its
// own, on PostgreSQL the NOTIFY of the jobs triggers. It only reads. A lane
// woken for nothing probes, finds nothing, and sleeps again.
type wakes struct {
	mu sync.Mutex
	ch chan struct{}
}

func newWakes() *wakes { return &wakes{ch: make(chan struct{})} }

// C is closed at the next wake.
func (w *wakes) C() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

func (w *wakes) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.ch)
	w.ch = make(chan struct{})
}

// idle pauses a lane for d, or until ctx ends or the database changed.
func (e *Engine) idle(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-e.wakes.C():
	}
}

// watchChanges wakes the lanes whenever the database changed, until ctx
// ends. Without a watcher the lanes keep to their backoff, as before.
func (e *Engine) watchChanges(ctx context.Context) {
	w, err := feed.New(e.st).WatchChanges(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("change watcher unavailable: idle lanes claim on their backoff alone", "err", err)
		}
		return
	}
	defer w.Close()
	t := time.NewTicker(e.cfg.WakeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if changed, err := w.Changed(ctx); err == nil && changed {
			e.wakes.wake()
		}
	}
}
