package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/protocol"
)

// Causes with which an executor's context is cancelled. The engine reads
// them back with context.Cause to decide how the row ends.
var (
	errCancelRequested = errors.New("cancel requested")
	errYieldRequested  = errors.New("a scan is waiting: yield the single-active slot")
	errShutdown        = errors.New("worker shutting down")
)

// ErrLeaseLost is the cause with which an executor's context is cancelled
// when its row is no longer its own (recovered, or no heartbeat succeeded
// for a whole lease). An executor that writes results after a cancel (the
// hash executor flushes what it computed) must not do so after this one:
// the store would refuse the writes anyway (store.ErrLeaseLost).
var ErrLeaseLost = errors.New("lease lost")

// Engine is one workerd process's job engine: a set of lanes, each a loop
// that claims one row of its table when idle, runs its executor under a
// heartbeated lease and writes the terminal state.
type Engine struct {
	st  *store.Store
	ls  *leases.Leases
	ex  Executors
	cfg Config
	log *slog.Logger

	// workCtx outlives the claim loops: running executors keep it through
	// the shutdown grace, then it is cancelled with errShutdown.
	workCtx    context.Context
	cancelWork context.CancelCauseFunc

	cancelCheck   atomic.Int64 // ns
	walMaxRetries atomic.Int64
	renderTimeout atomic.Int64 // ns
	// scanning counts this process's running scan and hash jobs: while
	// one runs, covers render one at a time (claimCoverBesideJobs).
	scanning  atomic.Int32
	scanStart sync.RWMutex // a job's start waits for the covers' claims under way

	wakes *wakes
}

// New validates cfg and builds an engine over st, which must be opened with
// store.RoleWorker so that the whitelist authorizer guards every write.
func New(st *store.Store, ex Executors, cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{st: st, ls: leases.New(st), ex: ex, cfg: cfg, log: cfg.Logger.With("worker_id", cfg.WorkerID), wakes: newWakes()}
	e.cancelCheck.Store(int64(500 * time.Millisecond))
	e.walMaxRetries.Store(5)
	e.renderTimeout.Store(int64(10 * time.Minute))
	return e, nil
}

// Run registers the worker, runs the lanes until ctx is cancelled, then
// shuts down gracefully: no new claims, running work gets ShutdownGrace to
// finish, then it is cancelled and its leases are released at once
// (protocol: jobs → retryable worker_shutdown, thumbnails/cleanup →
// pending, wal → retryable). It returns nil after a clean shutdown.
func (e *Engine) Run(ctx context.Context) error {
	e.workCtx, e.cancelWork = context.WithCancelCause(context.WithoutCancel(ctx))
	defer e.cancelWork(errShutdown)
	e.loadSettings(ctx)
	if err := e.register(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	lanes := e.lanes()
	for _, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.loop(ctx, l)
		}()
	}
	if len(lanes) == 0 {
		e.log.Warn("no executors configured: this worker claims nothing")
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.watchChanges(ctx)
		}()
	}
	e.log.Info("engine started", "lanes", len(lanes), "lease", e.cfg.Lease)
	e.keepAlive(ctx)
	e.shutdown(&wg)
	return nil
}

// lane is one claim loop: once claims and runs at most one row and reports
// whether it found one.
type lane struct {
	name string
	once func(ctx context.Context) (bool, error)
}

func (e *Engine) lanes() []lane {
	var ls []lane
	if e.ex.Scan != nil || e.ex.Hash != nil || e.ex.Delete != nil {
		ls = append(ls, lane{"jobs", e.jobOnce})
	}
	if e.ex.Thumbnail != nil {
		for i := range e.cfg.ThumbnailConcurrency {
			ls = append(ls, lane{fmt.Sprintf("thumbnails-%d", i), e.thumbnailOnce(i > 0)})
		}
	}
	if e.ex.Cleanup != nil {
		ls = append(ls, lane{"cleanup", e.cleanupOnce})
	}
	if e.ex.Checkpoint != nil {
		ls = append(ls, lane{"wal", e.checkpointOnce})
	}
	return ls
}

// loop claims while there is work and pauses, doubling from IdleMin to
// IdleMax with jitter, while there is none or the database errs (busy
// beyond every retry included): a lane never spins and never crashes.
func (e *Engine) loop(ctx context.Context, l lane) {
	pause := e.cfg.IdleMin
	for ctx.Err() == nil {
		worked, err := l.once(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("claim failed", "lane", l.name, "err", err, "busy", store.IsBusy(err))
		}
		if worked && err == nil {
			pause = e.cfg.IdleMin
			continue
		}
		e.idle(ctx, jitter(pause))
		pause = min(pause*2, e.cfg.IdleMax)
	}
}

// keepAlive refreshes the workers row and the settings every Lease/3 until
// ctx ends.
func (e *Engine) keepAlive(ctx context.Context) {
	t := time.NewTicker(e.cfg.Lease / protocol.HeartbeatDivisor)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := e.ls.TouchWorker(ctx, e.cfg.WorkerID)
			if errors.Is(err, store.ErrNotFound) {
				err = e.register(ctx)
			}
			if err != nil && ctx.Err() == nil {
				e.log.Warn("refresh workers row", "err", err)
			}
			e.loadSettings(ctx)
		}
	}
}

func (e *Engine) register(ctx context.Context) error {
	return e.ls.RegisterWorker(ctx, leases.Worker{
		WorkerID: e.cfg.WorkerID, Host: e.cfg.Host, PID: int64(e.cfg.PID), Version: e.cfg.Version,
	})
}

// loadSettings refreshes the settings the engine obeys; on error the last
// values stay.
func (e *Engine) loadSettings(ctx context.Context) {
	if e.cfg.CancelCheck > 0 {
		e.cancelCheck.Store(int64(e.cfg.CancelCheck))
	}
	if e.cfg.WALMaxRetries > 0 {
		e.walMaxRetries.Store(int64(e.cfg.WALMaxRetries))
	}
	if e.cfg.RenderTimeout > 0 {
		e.renderTimeout.Store(int64(e.cfg.RenderTimeout))
	}
	if e.cfg.CancelCheck > 0 && e.cfg.WALMaxRetries > 0 && e.cfg.RenderTimeout > 0 {
		return
	}
	v, err := settings.Load(ctx, e.st)
	if err != nil {
		e.log.Warn("load settings", "err", err)
		return
	}
	if e.cfg.CancelCheck <= 0 {
		e.cancelCheck.Store(v.Int(settings.ScanCancelCheckIntervalMS) * int64(time.Millisecond))
	}
	if e.cfg.WALMaxRetries <= 0 {
		e.walMaxRetries.Store(v.Int(settings.WALCheckpointMaxRetries))
	}
	if e.cfg.RenderTimeout <= 0 {
		e.renderTimeout.Store(v.Int(settings.ThumbnailRenderTimeoutSec) * int64(time.Second))
	}
}

// shutdown waits for the lanes' running work up to ShutdownGrace, then
// cancels it, gives executors one more lease third to return, and hands
// back whatever this worker still holds.
func (e *Engine) shutdown(wg *sync.WaitGroup) {
	e.log.Info("shutting down: no new claims", "grace", e.cfg.ShutdownGrace)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(e.cfg.ShutdownGrace):
		e.log.Info("grace period over: cancelling running work")
		e.cancelWork(errShutdown)
		select {
		case <-done:
		case <-time.After(e.cfg.Lease / protocol.HeartbeatDivisor):
			e.log.Warn("executors did not return after cancel; releasing their leases")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Lease)
	defer cancel()
	if c, err := e.ls.ReleaseWorker(ctx, e.cfg.WorkerID); err != nil {
		e.log.Error("release leases", "err", err)
	} else if c.Total() > 0 {
		e.log.Info("released leases", "counts", c)
	}
	if err := e.ls.StopWorker(ctx, e.cfg.WorkerID); err != nil {
		e.log.Warn("mark worker stopped", "err", err)
	}
	e.log.Info("engine stopped")
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// jitter spreads d over [d/2, d) so that lanes and processes drift apart.
func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
