// Package walmaint is workerd's executor of wal_maintenance_jobs rows
// (protocol §4.5): it runs PRAGMA wal_checkpoint(<mode>) on a connection of
// its own and reports SQLite's three figures. The engine owns the lease and
// decides what the figures mean (busy > 0 → retryable with backoff, then
// failed after wal.checkpoint.max_retries).
package walmaint

import (
	"context"
	"fmt"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// Config configures the executor. Zero values take the documented defaults.
type Config struct {
	// BusyTimeout bounds how long one checkpoint waits for readers and
	// writers; default store.DefaultCheckpointBusyTimeout (1s). A
	// restart/truncate checkpoint blocks new writers while it waits, so
	// this is also the longest stall it can impose on them; a checkpoint
	// that cannot finish in time reports busy and is retried later.
	BusyTimeout time.Duration
	// NoPassiveFirst disables the passive pass that precedes a restart or
	// truncate checkpoint; default false (the pass runs). A blocking
	// checkpoint holds SQLite's writer lock while it copies frames, so
	// copying the bulk first without that lock (passive) leaves the
	// blocking pass only the frames written meanwhile: writers stall for
	// that remainder instead of for the whole WAL.
	NoPassiveFirst bool
}

// Executor implements engine.CheckpointExecutor.
type Executor struct {
	st  *store.Store
	cfg Config
}

var _ engine.CheckpointExecutor = (*Executor)(nil)

// New returns an executor checkpointing st's database.
func New(st *store.Store, cfg Config) *Executor {
	if cfg.BusyTimeout <= 0 {
		cfg.BusyTimeout = store.DefaultCheckpointBusyTimeout
	}
	return &Executor{st: st, cfg: cfg}
}

// Checkpoint runs the row's requested mode (after a passive pass, see
// Config.NoPassiveFirst) and returns the figures of the requested mode. A
// busy checkpoint is not an
// error: its figures say so. A mode outside the protocol, or an SQLite
// failure, is a checkpoint_failed error.
func (e *Executor) Checkpoint(ctx context.Context, w model.WALJob) (engine.CheckpointResult, error) {
	mode, err := protocol.ParseCheckpointMode(string(w.RequestedMode))
	if err != nil {
		return engine.CheckpointResult{}, protocol.Errorf(protocol.ErrCheckpointFailed, "wal row %d: %v", w.ID, err)
	}
	if mode != protocol.CheckpointPassive && !e.cfg.NoPassiveFirst {
		if _, _, _, err := e.st.CheckpointTimeout(ctx, protocol.CheckpointPassive, e.cfg.BusyTimeout); err != nil {
			return engine.CheckpointResult{}, protocol.Wrap(protocol.ErrCheckpointFailed, fmt.Errorf("wal row %d: passive pass: %w", w.ID, err))
		}
	}
	busy, log, done, err := e.st.CheckpointTimeout(ctx, mode, e.cfg.BusyTimeout)
	if err != nil {
		return engine.CheckpointResult{}, protocol.Wrap(protocol.ErrCheckpointFailed, fmt.Errorf("wal row %d: %w", w.ID, err))
	}
	return engine.CheckpointResult{Busy: busy, LogFrames: log, CheckpointedFrames: done}, nil
}
