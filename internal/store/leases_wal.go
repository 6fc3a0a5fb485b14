package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// Lease paths of wal_maintenance_jobs (protocol §4.5, §7.5).

const walEligible = `status IN ('pending','retryable') AND execute_after <= ?
	AND (retry_after IS NULL OR retry_after <= ?)`

const walProbe = `SELECT EXISTS (SELECT 1 FROM wal_maintenance_jobs WHERE ` + walEligible + `)
	, EXISTS (SELECT 1 FROM wal_maintenance_jobs WHERE ` + staleWhere + `)`

const walClaim = `UPDATE wal_maintenance_jobs SET status = 'running', worker_id = ?, worker_heartbeat_at = ?,
	lease_expires_at = ?, started_at = ?, finished_at = NULL, updated_at = ?
	WHERE id = (SELECT id FROM wal_maintenance_jobs WHERE ` + walEligible + ` ORDER BY execute_after, id LIMIT 1)
	AND status IN ('pending','retryable') RETURNING *`

// ClaimCheckpoint recovers stale WAL rows (running → retryable with
// retry_count+1 and a backoff) and claims the earliest due pending or
// retryable row whose retry_after passed. It returns nil, nil when nothing
// is eligible.
func (s *Store) ClaimCheckpoint(ctx context.Context, workerID string, lease time.Duration) (*WALJob, error) {
	var w *WALJob
	err := s.claim(ctx, claimPath{gate: &s.gates.wal, probe: walProbe,
		probeArgs: func(now string) []any { return []any{now, now, now} },
		recover:   recoverStaleWAL,
		claim: func(q sqlx.QueryerContext, now, expires string) error {
			w = nil
			var row WALJob
			err := sqlx.GetContext(ctx, q, &row, walClaim, workerID, now, expires, now, now, now, now)
			if err == nil {
				w = &row
			}
			return err
		}}, lease)
	if err != nil {
		return nil, fmt.Errorf("claim checkpoint: %w", err)
	}
	return w, nil
}

// HeartbeatCheckpoint extends the lease of a WAL row this worker owns.
func (s *Store) HeartbeatCheckpoint(ctx context.Context, id int64, workerID string, lease time.Duration) error {
	return s.heartbeat(ctx, "wal_maintenance_jobs", id, workerID, lease)
}

// CheckpointFigures are the three numbers PRAGMA wal_checkpoint returns.
type CheckpointFigures struct {
	Busy, LogFrames, CheckpointedFrames int64
}

// SucceedCheckpoint ends a WAL row this worker owns as completed with the
// checkpoint's figures.
func (s *Store) SucceedCheckpoint(ctx context.Context, id int64, workerID string, f CheckpointFigures) error {
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		ts := s.nowText()
		return ownedExec(ctx, tx, `UPDATE wal_maintenance_jobs SET status = 'completed', checkpoint_busy = ?,
			checkpoint_log_frames = ?, checkpointed_frames = ?, error_code = NULL, error_message = NULL,
			finished_at = ?, lease_expires_at = NULL, updated_at = ?
			WHERE id = ? AND worker_id = ? AND status = 'running'`,
			f.Busy, f.LogFrames, f.CheckpointedFrames, ts, ts, id, workerID)
	})
	return ownerErr("succeed checkpoint", id, err)
}

// RetryCheckpoint is the busy path: the row keeps its figures for audit
// and becomes retryable with retry_count+1 and retry_after = now +
// WALBackoff, or failed once retry_count would exceed maxRetries
// (setting wal.checkpoint.max_retries).
func (s *Store) RetryCheckpoint(ctx context.Context, id int64, workerID string, f CheckpointFigures, code, message string, maxRetries int) error {
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		now := s.Now()
		ts := protocol.FormatTime(now)
		var n int64
		if err := tx.GetContext(ctx, &n, `SELECT retry_count + 1 FROM wal_maintenance_jobs
			WHERE id = ? AND worker_id = ? AND status = 'running'`, id, workerID); err != nil {
			return err
		}
		status, retry, finished := string(protocol.WALRetryable), any(protocol.FormatTime(now.Add(WALBackoff(n)))), any(nil)
		if n > int64(maxRetries) {
			status, retry, finished = string(protocol.WALFailed), nil, ts
		}
		return ownedExec(ctx, tx, `UPDATE wal_maintenance_jobs SET status = ?, retry_count = ?, retry_after = ?,
			checkpoint_busy = ?, checkpoint_log_frames = ?, checkpointed_frames = ?, error_code = ?, error_message = ?,
			finished_at = ?, lease_expires_at = NULL, updated_at = ?
			WHERE id = ? AND worker_id = ? AND status = 'running'`,
			status, n, retry, f.Busy, f.LogFrames, f.CheckpointedFrames, code, message, finished, ts, id, workerID)
	})
	return ownerErr("retry checkpoint", id, err)
}

// FailCheckpoint ends a WAL row this worker owns as failed.
func (s *Store) FailCheckpoint(ctx context.Context, id int64, workerID, code, message string) error {
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		ts := s.nowText()
		return ownedExec(ctx, tx, `UPDATE wal_maintenance_jobs SET status = 'failed', error_code = ?, error_message = ?,
			finished_at = ?, lease_expires_at = NULL, updated_at = ?
			WHERE id = ? AND worker_id = ? AND status = 'running'`, code, message, ts, ts, id, workerID)
	})
	return ownerErr("fail checkpoint", id, err)
}

// ReleaseCheckpoint hands a WAL row back on graceful shutdown: running →
// retryable, due at once, retry_count unchanged (a shutdown is no failure).
func (s *Store) ReleaseCheckpoint(ctx context.Context, id int64, workerID string) error {
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		ts := s.nowText()
		return ownedExec(ctx, tx, `UPDATE wal_maintenance_jobs SET status = 'retryable', retry_after = ?,
			worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, error_code = ?, error_message = ?,
			finished_at = NULL, updated_at = ? WHERE id = ? AND worker_id = ? AND status = 'running'`,
			ts, protocol.ErrWorkerShutdown, "worker shut down before the checkpoint finished", ts, id, workerID)
	})
	return ownerErr("release checkpoint", id, err)
}

// ReleaseWorker hands back every row of the four lease tables still
// running under workerID, as the per-row Release paths do. workerd calls it
// last on shutdown, for rows whose executor did not return in time.
func (s *Store) ReleaseWorker(ctx context.Context, workerID string) (RecoverCounts, error) {
	var c RecoverCounts
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		ts := s.nowText()
		n := func(res interface{ RowsAffected() (int64, error) }, err error) (int64, error) {
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		}
		var err error
		if c.Jobs, err = n(tx.ExecContext(ctx, releaseJobSQL, releaseJobArgs(ts, workerID)...)); err != nil {
			return err
		}
		for _, t := range []struct {
			table string
			dst   *int64
		}{{"thumbnails", &c.Thumbnails}, {"thumbnail_cleanup_jobs", &c.Cleanup}} {
			if *t.dst, err = n(tx.ExecContext(ctx, `UPDATE `+t.table+` SET status = 'pending', worker_id = NULL,
				worker_heartbeat_at = NULL, lease_expires_at = NULL, updated_at = ?
				WHERE worker_id = ? AND status = 'running'`, ts, workerID)); err != nil {
				return err
			}
		}
		c.WAL, err = n(tx.ExecContext(ctx, `UPDATE wal_maintenance_jobs SET status = 'retryable', retry_after = ?,
			worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, error_code = ?, error_message = ?,
			finished_at = NULL, updated_at = ? WHERE worker_id = ? AND status = 'running'`,
			ts, protocol.ErrWorkerShutdown, "worker shut down before the checkpoint finished", ts, workerID))
		return err
	})
	if err != nil {
		return RecoverCounts{}, fmt.Errorf("release worker %s: %w", workerID, err)
	}
	return c, nil
}
