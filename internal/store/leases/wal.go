package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/backoff"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// Lease paths of wal_maintenance_jobs (protocol §4.5, §7.5).

const walEligible = `status IN ('pending','retryable') AND execute_after <= ?
	AND (retry_after IS NULL OR retry_after <= ?)`

const walProbe = `SELECT EXISTS (SELECT 1 FROM wal_maintenance_jobs WHERE ` + walEligible + `)
	, EXISTS (SELECT 1 FROM wal_maintenance_jobs WHERE ` + staleWhere + `)`

const walClaim = `UPDATE wal_maintenance_jobs SET status = 'running', worker_id = ?, worker_heartbeat_at = ?,
	lease_expires_at = ?, started_at = ?, finished_at = NULL, updated_at = ?, lease_epoch = lease_epoch + 1
	WHERE id = (SELECT id FROM wal_maintenance_jobs WHERE ` + walEligible + ` ORDER BY execute_after, id LIMIT 1)
	AND status IN ('pending','retryable') RETURNING *`

// ClaimCheckpoint recovers stale WAL rows (running → retryable with
// retry_count+1 and a backoff) and claims the earliest due pending or
// retryable row whose retry_after passed. It returns nil, nil when nothing
// is eligible.
func (s *Leases) ClaimCheckpoint(ctx context.Context, workerID string, lease time.Duration) (*model.WALJob, error) {
	w, err := claimRow[model.WALJob](ctx, s, claimPath{gate: &s.gates.wal, probe: walProbe,
		probeArgs: func(now string) []any { return []any{now, now, now} },
		recover:   recoverStaleWAL,
		query:     walClaim,
		args:      func(now, expires string) []any { return []any{workerID, now, expires, now, now, now, now} }}, lease)
	if err != nil {
		return nil, fmt.Errorf("claim checkpoint: %w", err)
	}
	return w, nil
}

// CheckpointFigures are the three numbers PRAGMA wal_checkpoint returns.
type CheckpointFigures struct {
	Busy, LogFrames, CheckpointedFrames int64
}

// SucceedCheckpoint ends the WAL row of claim w as completed with the
// checkpoint's figures (fenced: ErrLeaseLost when w is no longer its live
// lease).
func (s *Leases) SucceedCheckpoint(ctx context.Context, w model.Fence, f CheckpointFigures) error {
	ts := s.db.NowText()
	return s.endLease(ctx, "succeed checkpoint", w, `UPDATE wal_maintenance_jobs SET status = 'completed', checkpoint_busy = ?,
		checkpoint_log_frames = ?, checkpointed_frames = ?, error_code = NULL, error_message = NULL,
		finished_at = ?, lease_expires_at = NULL, updated_at = ? WHERE `+fenceWhere,
		f.Busy, f.LogFrames, f.CheckpointedFrames, ts, ts)
}

// RetryCheckpoint is the busy path: the row keeps its figures for audit
// and becomes retryable with retry_count+1 and retry_after = now +
// backoff.WAL, or failed once retry_count would exceed maxRetries
// (setting wal.checkpoint.max_retries).
func (s *Leases) RetryCheckpoint(ctx context.Context, w model.Fence, f CheckpointFigures, code, message string, maxRetries int) error {
	err := s.db.Fenced(ctx, w, func(tx *sqlx.Tx) error {
		now := s.db.Now()
		ts := protocol.FormatTime(now)
		var n int64
		if err := tx.GetContext(ctx, &n, `SELECT retry_count + 1 FROM wal_maintenance_jobs WHERE id = ?`, w.ID); err != nil {
			return err
		}
		status, retry, finished := string(protocol.WALRetryable), any(protocol.FormatTime(now.Add(backoff.WAL(n)))), any(nil)
		if n > int64(maxRetries) {
			status, retry, finished = string(protocol.WALFailed), nil, ts
		}
		return sqldb.OwnedExec(ctx, tx, `UPDATE wal_maintenance_jobs SET status = ?, retry_count = ?, retry_after = ?,
			checkpoint_busy = ?, checkpoint_log_frames = ?, checkpointed_frames = ?, error_code = ?, error_message = ?,
			finished_at = ?, lease_expires_at = NULL, updated_at = ? WHERE id = ?`,
			status, n, retry, f.Busy, f.LogFrames, f.CheckpointedFrames, code, message, finished, ts, w.ID)
	})
	return fenceErr("retry checkpoint", w, err)
}

// FailCheckpoint ends the WAL row of claim w as failed (fenced).
func (s *Leases) FailCheckpoint(ctx context.Context, w model.Fence, code, message string) error {
	ts := s.db.NowText()
	return s.endLease(ctx, "fail checkpoint", w, `UPDATE wal_maintenance_jobs SET status = 'failed', error_code = ?,
		error_message = ?, finished_at = ?, lease_expires_at = NULL, updated_at = ? WHERE `+fenceWhere, code, message, ts, ts)
}
