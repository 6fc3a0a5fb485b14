// Package scheduler is controld's clock: small periodic services that turn
// time and finished work into rows (protocol §4, §5, issue 8). The scan
// queue's dispatcher with job follow-ups (the hash job after a scan, the
// rest of a hash job that yielded), cover admission, periodic scans, stale-lease recovery, retries, retention, WAL
// checkpoints and missing-file cover cleanups. Every service keeps its
// state in the database, so a restarted controld (or a second one) simply
// continues; none of them ever stops controld on error.
package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// CoverAdmitter admits thumbnail rows for files flagged needs_cover.
// *store.Store is the one New uses; tests substitute theirs (WithCovers) to
// observe the calls.
type CoverAdmitter interface {
	AdmitPendingCovers(ctx context.Context, libraryID int64, limit int, capacity, shardCount int64, format protocol.ImageFormat) (int64, error)
}

// CleanupScheduler schedules cover cleanups of files missing for longer
// than missingFor. *store.Store is the one New uses; tests substitute a
// failing one (WithCleanups) to prove a broken service is contained.
type CleanupScheduler interface {
	ScheduleMissingCleanups(ctx context.Context, missingFor time.Duration) (int64, error)
}

// Scheduler runs the services. Create it with New, then Start; Stop ends
// every service and waits for them.
type Scheduler struct {
	st       *store.Store
	ls       *leases.Leases
	dp       *duplicates.Store
	th       *thumbnails.Store
	q        *queue.Store
	cfg      Config
	covers   CoverAdmitter
	cleanups CleanupScheduler
	metrics  *metrics

	mu       sync.Mutex
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	dispatch *service
}

// New prepares a scheduler over st; nothing runs before Start.
func New(st *store.Store, cfg Config) *Scheduler {
	s := &Scheduler{st: st, ls: leases.New(st), dp: duplicates.New(st), th: thumbnails.New(st), q: queue.New(st), cfg: cfg.withDefaults()}
	s.covers, s.cleanups = s.th, s.th
	return s
}

// WithCovers replaces the cover admitter.
func (s *Scheduler) WithCovers(a CoverAdmitter) *Scheduler { s.covers = a; return s }

// WithCleanups replaces the cleanup scheduler.
func (s *Scheduler) WithCleanups(c CleanupScheduler) *Scheduler { s.cleanups = c; return s }

// ErrRunning is returned by Start on a scheduler already started.
var ErrRunning = errors.New("scheduler already running")

// Start starts every service on its own goroutine; each runs once at
// once, then on its period. ctx bounds them all, as does Stop.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return ErrRunning
	}
	m, err := newMetrics(s.cfg.Registry)
	if err != nil {
		return err
	}
	s.metrics = m
	s.dispatch = newService("dispatch", s.cfg.DispatchInterval, s.dispatchOnce, s)
	services := []*service{
		s.dispatch,
		newService("covers", s.cfg.FollowUpInterval, s.admitCoversTick, s),
		newService("schedule", s.cfg.ScheduleInterval, s.scheduledScans, s),
		newService("recover", s.cfg.Lease/protocol.RecoverDivisor, s.recoverStale, s),
		newService("retry", s.cfg.RetryInterval, s.retries, s),
		newService("retention", s.cfg.RetentionInterval, s.retention, s),
		newService("wal", s.cfg.WALInterval, s.walCheckpoints, s),
		newService("cleanups", s.cfg.CleanupInterval, s.missingCleanups, s),
		newService("trash", s.cfg.CleanupInterval, s.trashPurges, s),
		newService("progress", s.cfg.FollowUpInterval, s.dp.SettleKeeperProgress, s),
	}
	ctx, s.cancel = context.WithCancel(ctx)
	for _, sv := range services {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			sv.run(ctx)
		}()
	}
	s.cfg.Logger.Info("scheduler started", "services", len(services), "lease", s.cfg.Lease)
	return nil
}

// Stop ends every service and waits for the running ticks to return. It
// is safe to call more than once and without Start.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	cancel := s.cancel
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	s.wg.Wait()
	s.cfg.Logger.Info("scheduler stopped")
}

// Kick wakes the dispatcher at once (the API calls it after a request or
// a cancel, so a free slot is filled without waiting for the poll).
func (s *Scheduler) Kick() {
	s.mu.Lock()
	d := s.dispatch
	s.mu.Unlock()
	if d != nil {
		d.Kick()
	}
}
