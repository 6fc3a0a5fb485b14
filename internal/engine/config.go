package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/bindery-nas/bindery/internal/version"
	"github.com/bindery-nas/bindery/protocol"
)

// DefaultShutdownGrace is how long running work may finish after SIGTERM
// (workerd's --shutdown-grace): longer than controld's, whose requests are
// short, and shorter than compose's stop_grace_period and systemd's
// TimeoutStopSec (30 s), so leases are released before a SIGKILL.
const DefaultShutdownGrace = 20 * time.Second

// Config configures an Engine. Zero values take the documented defaults.
type Config struct {
	// WorkerID names this process in worker_id columns and the workers
	// table. Required; unique per live process.
	WorkerID string
	// Lease is how long a claim stays valid without a heartbeat; default
	// protocol.DefaultLeaseDuration (30s). Heartbeats run every Lease/3.
	Lease time.Duration
	// ThumbnailConcurrency is the number of thumbnail lanes; default
	// runtime.NumCPU().
	ThumbnailConcurrency int
	// ShutdownGrace is how long running work may finish after shutdown
	// begins before it is cancelled and its leases released; default
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// CancelCheck overrides how often a running job checks for a cancel
	// request; default the setting scan.cancel_check.interval_ms (500ms).
	CancelCheck time.Duration
	// WALMaxRetries overrides the busy retries of a checkpoint; default the
	// setting wal.checkpoint.max_retries (5).
	WALMaxRetries int
	// RenderTimeout overrides how long a cover render may run before it
	// is cancelled and fails render_timeout; default the setting
	// thumbnail.render_timeout_seconds (600).
	RenderTimeout time.Duration
	// OnStuck is called when a cancelled cover render has not returned two
	// leases later: it is stuck where no context reaches (inside a C
	// library), and holds its lane and its lease for as long as the
	// process lives. workerd exits (its supervisor restarts it; recovery
	// counts the render as a crash, and a cover that sticks three times
	// fails render_crashed, as one that kills the process does). nil: the
	// engine only logs.
	OnStuck func()
	// IdleMin and IdleMax bound the jittered, doubling pause of a lane that
	// found nothing to claim; defaults 100ms and 1s.
	IdleMin, IdleMax time.Duration
	// WakeInterval is how often an idle engine asks the database whether
	// another connection committed (wakes.go); default 100ms.
	WakeInterval time.Duration
	// Host, PID and Version fill the workers row; defaults os.Hostname(),
	// os.Getpid() and version.Version.
	Host    string
	PID     int
	Version string
	// Logger receives the engine's logs; default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.WorkerID == "" {
		return c, errors.New("engine: no worker id")
	}
	if c.Lease <= 0 {
		c.Lease = protocol.DefaultLeaseDuration
	}
	if c.Lease < 300*time.Millisecond {
		return c, fmt.Errorf("engine: lease %v too short (minimum 300ms)", c.Lease)
	}
	if c.ThumbnailConcurrency <= 0 {
		c.ThumbnailConcurrency = runtime.NumCPU()
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.IdleMin <= 0 {
		c.IdleMin = 100 * time.Millisecond
	}
	if c.IdleMax < c.IdleMin {
		c.IdleMax = max(time.Second, c.IdleMin)
	}
	if c.WakeInterval <= 0 {
		c.WakeInterval = 100 * time.Millisecond
	}
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.PID == 0 {
		c.PID = os.Getpid()
	}
	if c.Version == "" {
		c.Version = version.Version
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// Executors are the per-kind executors. A nil executor means its lane does
// not run in this process (the scan/hash lane runs when either is set and
// leaves the other kind's rows to other workers).
type Executors struct {
	Scan, Hash JobExecutor
	// Delete carries out the delete plans controld authorized.
	Delete     JobExecutor
	Thumbnail  ThumbnailExecutor
	Cleanup    CleanupExecutor
	Checkpoint CheckpointExecutor
}
