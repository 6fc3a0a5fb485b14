package scheduler

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bindery-nas/bindery/protocol"
)

// Config configures the scheduler. Zero values take the documented
// defaults. Policy figures that operators change at run time (retention
// hours, checkpoint interval, hash mode, ...) are settings, read from the
// database on every tick; Config only holds process-level timing.
type Config struct {
	// Registry receives the scheduler's metrics; default a private registry
	// (never the global one), so metrics are simply not exported.
	Registry prometheus.Registerer
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Lease is the workers' lease duration; the stale-lease sweep runs
	// every Lease/2. Default protocol.DefaultLeaseDuration (30s).
	Lease time.Duration
	// Jitter is the fraction of each period added at random, so that two
	// controlds (or services) do not tick in lockstep; default 0.1.
	Jitter float64

	// DispatchInterval is how often the dispatcher polls (on the reader
	// pool) for a free slot and a waiting request; default 500ms. Kick
	// wakes it at once.
	DispatchInterval time.Duration
	// FollowUpInterval is the period of cover admission; default 2s. (Job
	// follow-ups run on every dispatcher tick.)
	FollowUpInterval time.Duration
	// ScheduleInterval is how often periodic scans are checked; default
	// 30s (library intervals are whole minutes).
	ScheduleInterval time.Duration
	// RetryInterval is the period of retryable-job and failed-thumbnail
	// re-queueing; default 5s.
	RetryInterval time.Duration
	// RetentionInterval is the period of retention; default 10m.
	RetentionInterval time.Duration
	// RetentionBatch is the most rows one retention transaction deletes;
	// default 500.
	RetentionBatch int
	// KeepScanSessions finished scan sessions are kept per library;
	// default 50.
	KeepScanSessions int
	// MaintenanceRetention is how long completed wal/cleanup rows and
	// failed jobs are kept at least; default 7 days.
	MaintenanceRetention time.Duration
	// WALInterval is how often the WAL size and the passive schedule are
	// checked; default 30s.
	WALInterval time.Duration
	// CleanupInterval is the period of missing-file cover cleanups;
	// default 10m.
	CleanupInterval time.Duration
	// CoverBatch is the most cover rows admitted per library per
	// transaction; default 500.
	CoverBatch int
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Lease, protocol.DefaultLeaseDuration)
	def(&c.DispatchInterval, 500*time.Millisecond)
	def(&c.FollowUpInterval, 2*time.Second)
	def(&c.ScheduleInterval, 30*time.Second)
	def(&c.RetryInterval, 5*time.Second)
	def(&c.RetentionInterval, 10*time.Minute)
	def(&c.MaintenanceRetention, 7*24*time.Hour)
	def(&c.WALInterval, 30*time.Second)
	def(&c.CleanupInterval, 10*time.Minute)
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Jitter <= 0 {
		c.Jitter = 0.1
	}
	if c.RetentionBatch <= 0 {
		c.RetentionBatch = 500
	}
	if c.KeepScanSessions <= 0 {
		c.KeepScanSessions = 50
	}
	if c.CoverBatch <= 0 {
		c.CoverBatch = 500
	}
	return c
}
