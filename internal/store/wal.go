package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// WAL maintenance (protocol §4.5): controld enqueues wal_maintenance_jobs
// rows, workerd claims them and runs PRAGMA wal_checkpoint on a dedicated
// connection. The claim/heartbeat/finish SQL lives with the engine's lease
// code; this file holds admission, reads and the checkpoint itself.

const walCols = `id, requested_mode, reason, status, execute_after, retry_count, retry_after,
	checkpoint_busy, checkpoint_log_frames, checkpointed_frames, worker_id, worker_heartbeat_at,
	lease_expires_at, error_code, error_message, created_at, updated_at, started_at, finished_at`

// DefaultCheckpointBusyTimeout bounds how long Checkpoint waits for readers
// and writers. A restart/truncate checkpoint blocks every new writer while
// it waits, so the wait is kept short: a checkpoint that cannot finish in
// time reports busy and is retried later with backoff.
const DefaultCheckpointBusyTimeout = time.Second

// WALFile is the SQLite database's -wal file, which controld checkpoints
// through wal_maintenance_jobs; false on PostgreSQL, whose server runs its
// own checkpoints.
func (s *Store) WALFile() (string, bool) {
	if s.dialect == dialectPostgres {
		return "", false
	}
	return s.path + "-wal", true
}

// EnqueueCheckpoint requests a checkpoint. An active row (pending, running
// or retryable) is returned instead of a duplicate, with false; a pending
// row is raised to the stronger mode when asked (passive < restart <
// truncate). Without force, a request closer than minInterval to the
// previous one is refused with ErrQueueFull.
func (s *Store) EnqueueCheckpoint(ctx context.Context, mode protocol.CheckpointMode, reason string, force bool, minInterval time.Duration) (model.WALJob, bool, error) {
	if _, err := protocol.ParseCheckpointMode(string(mode)); err != nil {
		return model.WALJob{}, false, fmt.Errorf("enqueue checkpoint: %w: %v", ErrInvalidRequest, err)
	}
	if _, ok := s.WALFile(); !ok {
		return model.WALJob{}, false, &protocol.Error{Code: protocol.CodeNoWAL,
			Message: "checkpoints are SQLite's: PostgreSQL checkpoints its own write-ahead log", Err: ErrConflict}
	}
	var (
		out     model.WALJob
		created bool
	)
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		created = false
		now := s.Now()
		active, err := activeCheckpoint(ctx, tx)
		if err != nil {
			return err
		}
		if active != nil {
			out, err = upgradeCheckpoint(ctx, tx, *active, mode, protocol.FormatTime(now))
			return err
		}
		if !force && minInterval > 0 {
			if err := checkInterval(ctx, tx, now, minInterval); err != nil {
				return err
			}
		}
		ts := protocol.FormatTime(now)
		created = true
		return tx.GetContext(ctx, &out, `INSERT INTO wal_maintenance_jobs
			(requested_mode, reason, status, execute_after, created_at, updated_at)
			VALUES (?, ?, 'pending', ?, ?, ?) RETURNING `+walCols, string(mode), reason, ts, ts, ts)
	})
	if err != nil {
		return model.WALJob{}, false, fmt.Errorf("enqueue checkpoint: %w", err)
	}
	return out, created, nil
}

func activeCheckpoint(ctx context.Context, tx *sqlx.Tx) (*model.WALJob, error) {
	var w model.WALJob
	err := tx.GetContext(ctx, &w, `SELECT `+walCols+` FROM wal_maintenance_jobs
		WHERE status IN ('pending','running','retryable') ORDER BY id LIMIT 1`)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &w, nil
}

var checkpointStrength = map[protocol.CheckpointMode]int{protocol.CheckpointPassive: 0, protocol.CheckpointRestart: 1, protocol.CheckpointTruncate: 2}

func upgradeCheckpoint(ctx context.Context, tx *sqlx.Tx, w model.WALJob, mode protocol.CheckpointMode, now string) (model.WALJob, error) {
	if w.Status != protocol.WALPending || checkpointStrength[mode] <= checkpointStrength[w.RequestedMode] {
		return w, nil
	}
	err := tx.GetContext(ctx, &w, `UPDATE wal_maintenance_jobs SET requested_mode = ?, updated_at = ?
		WHERE id = ? AND status = 'pending' RETURNING `+walCols, string(mode), now, w.ID)
	return w, err
}

func checkInterval(ctx context.Context, tx *sqlx.Tx, now time.Time, minInterval time.Duration) error {
	var last any // text on SQLite, a timestamp on PostgreSQL
	if err := tx.QueryRowContext(ctx, `SELECT max(created_at) FROM wal_maintenance_jobs`).Scan(&last); err != nil {
		return err
	}
	if last == nil {
		return nil
	}
	// The time triggers keep created_at canonical; should a value still
	// not parse, a checkpoint is allowed rather than refused until someone
	// forces one while the WAL grows.
	var t protocol.Time
	if err := t.Scan(last); err != nil {
		return nil
	}
	if wait := t.Add(minInterval).Sub(now); wait > 0 {
		return fmt.Errorf("%w: last checkpoint requested at %s, next allowed in %s",
			ErrQueueFull, t, wait.Round(time.Second))
	}
	return nil
}

// LatestCheckpoint returns the most recent wal_maintenance_jobs row.
func (s *Store) LatestCheckpoint(ctx context.Context) (*model.WALJob, error) {
	var w model.WALJob
	err := s.r.GetContext(ctx, &w, `SELECT `+walCols+` FROM wal_maintenance_jobs ORDER BY id DESC LIMIT 1`)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("latest checkpoint: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("latest checkpoint: %w", err)
	}
	return &w, nil
}

// CheckpointByID returns one wal_maintenance_jobs row.
func (s *Store) CheckpointByID(ctx context.Context, id int64) (model.WALJob, error) {
	var w model.WALJob
	err := s.r.GetContext(ctx, &w, `SELECT `+walCols+` FROM wal_maintenance_jobs WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return w, fmt.Errorf("checkpoint %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return w, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	return w, nil
}

// ListCheckpoints pages wal_maintenance_jobs newest first by id keyset:
// afterID is the last id of the previous page, 0 for the first page.
func (s *Store) ListCheckpoints(ctx context.Context, afterID int64, limit int) ([]model.WALJob, error) {
	if limit <= 0 {
		limit = 50
	}
	out := []model.WALJob{}
	err := s.r.SelectContext(ctx, &out, `SELECT `+walCols+` FROM wal_maintenance_jobs
		WHERE ? = 0 OR id < ? ORDER BY id DESC LIMIT ?`, afterID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	return out, nil
}

// Checkpoint runs PRAGMA wal_checkpoint(mode) with the default busy
// timeout; see CheckpointTimeout.
func (s *Store) Checkpoint(ctx context.Context, mode protocol.CheckpointMode) (busy, logFrames, checkpointed int64, err error) {
	return s.CheckpointTimeout(ctx, mode, DefaultCheckpointBusyTimeout)
}

// CheckpointTimeout runs PRAGMA wal_checkpoint(mode) on a connection of its
// own, opened for this call with busyTimeout as its busy timeout, and
// returns SQLite's three figures: busy (1 when a restart/truncate could
// not finish because of readers or a writer), frames in the WAL, and frames
// checkpointed. It never borrows the writer pool, whose connection would
// otherwise stay taken while SQLite waits; and it runs no transaction.
// SQLITE_BUSY raised by the pragma itself (another checkpoint is running)
// is reported as busy=1 with -1 frames, as sqlite3_wal_checkpoint_v2 does.
func (s *Store) CheckpointTimeout(ctx context.Context, mode protocol.CheckpointMode, busyTimeout time.Duration) (busy, logFrames, checkpointed int64, err error) {
	if _, err := protocol.ParseCheckpointMode(string(mode)); err != nil {
		return 0, 0, 0, fmt.Errorf("checkpoint: %w: %v", ErrInvalidRequest, err)
	}
	registerDrivers()
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(max(busyTimeout.Milliseconds(), 0)))
	q.Set("mode", "rw")
	// The worker driver: its authorizer allows pragmas and nothing that
	// writes rows, which is all a checkpoint needs.
	db, err := sql.Open(driverWorker, "file:"+(&url.URL{Path: s.path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return 0, 0, 0, fmt.Errorf("checkpoint: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	row := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+strings.ToUpper(string(mode))+")")
	if err := row.Scan(&busy, &logFrames, &checkpointed); err != nil {
		if IsBusy(err) {
			return 1, -1, -1, nil
		}
		return 0, 0, 0, fmt.Errorf("checkpoint %s: %w", mode, err)
	}
	return busy, logFrames, checkpointed, nil
}
