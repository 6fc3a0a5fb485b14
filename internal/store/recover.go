package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// RecoverCounts is how many stale rows one recovery pass took back, per
// lease table.
type RecoverCounts struct {
	Jobs       int64
	Thumbnails int64
	Cleanup    int64
	WAL        int64
}

// Total is the sum over the four tables.
func (c RecoverCounts) Total() int64 { return c.Jobs + c.Thumbnails + c.Cleanup + c.WAL }

// walRecoverMaxRetries bounds how often a WAL row whose worker keeps dying
// is recovered before it fails for good, so a checkpoint that crashes its
// worker cannot loop forever.
const walRecoverMaxRetries = 10

// RecoverStale recovers the stale rows of all four lease tables (protocol
// §4): running rows whose lease_expires_at is NULL or not in the future.
// It is what controld runs on a timer and what the admin API exposes; the
// claim paths run the same per-table statement in their own transaction.
// A live lease is never touched, and a second pass finds nothing to do.
func (s *Store) RecoverStale(ctx context.Context) (RecoverCounts, error) {
	var c RecoverCounts
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		c = RecoverCounts{}
		var err error
		now := s.Now()
		if c.Jobs, err = recoverStaleJobs(ctx, tx, now); err != nil {
			return err
		}
		if c.Thumbnails, err = recoverStaleThumbnails(ctx, tx, now); err != nil {
			return err
		}
		if c.Cleanup, err = recoverStaleCleanup(ctx, tx, now); err != nil {
			return err
		}
		c.WAL, err = recoverStaleWAL(ctx, tx, now)
		return err
	})
	if err != nil {
		return RecoverCounts{}, fmt.Errorf("recover stale: %w", err)
	}
	return c, nil
}

// staleWhere is the protocol's definition of a stale lease.
const staleWhere = `status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= ?)`

// recoverStaleJobs: running → retryable with lease_expired; worker_id is
// cleared so that no former owner can heartbeat or finish the row again.
// retry_after is stamped later by controld (RequeueRetryableJobs), since
// workerd's recover path may not write it (protocol §7.1).
func recoverStaleJobs(ctx context.Context, tx *sqlx.Tx, now time.Time) (int64, error) {
	ts := protocol.FormatTime(now)
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'retryable', worker_id = NULL,
		worker_heartbeat_at = NULL, lease_expires_at = NULL, error_code = ?, error_message = ?, updated_at = ?
		WHERE `+staleWhere, protocol.ErrLeaseExpired, protocol.LeaseExpiredMessage, ts, ts)
	if err != nil {
		return 0, fmt.Errorf("recover jobs: %w", err)
	}
	return res.RowsAffected()
}

// MaxRecoveries is how often a thumbnail or cleanup row may lose its worker
// (a stale lease, not a graceful release) before it fails for good: a row
// whose work kills workerd would otherwise be claimed after every restart.
const MaxRecoveries = 3

// recoverStaleThumbnails: running → pending, lease fields cleared; the
// third recovery fails the row with render_crashed instead. retry_after
// stays NULL, so the failed-cover retry does not bring it back; a
// regenerate request does.
func recoverStaleThumbnails(ctx context.Context, tx *sqlx.Tx, now time.Time) (int64, error) {
	return recoverStaleCounted(ctx, tx, "thumbnails", protocol.ErrRenderCrashed, now)
}

// recoverStaleCleanup: as recoverStaleThumbnails, with cleanup_crashed.
func recoverStaleCleanup(ctx context.Context, tx *sqlx.Tx, now time.Time) (int64, error) {
	return recoverStaleCounted(ctx, tx, "thumbnail_cleanup_jobs", protocol.ErrCleanupCrashed, now)
}

// recoverStaleCounted puts the stale rows of a lease table without retry
// bookkeeping back to pending, lease fields cleared and recovered_count
// raised; a row at MaxRecoveries fails with code.
func recoverStaleCounted(ctx context.Context, tx *sqlx.Tx, table, code string, now time.Time) (int64, error) {
	ts := protocol.FormatTime(now)
	res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET recovered_count = recovered_count + 1,
		status = CASE WHEN recovered_count + 1 >= ?1 THEN 'failed' ELSE 'pending' END,
		error_code = CASE WHEN recovered_count + 1 >= ?1 THEN ?2 ELSE error_code END,
		error_message = CASE WHEN recovered_count + 1 >= ?1 THEN ?3 ELSE error_message END,
		finished_at = CASE WHEN recovered_count + 1 >= ?1 THEN ?4 ELSE finished_at END,
		worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, updated_at = ?4
		WHERE status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= ?4)`,
		MaxRecoveries, code, fmt.Sprintf("the worker died %d times while holding this row", MaxRecoveries), ts)
	if err != nil {
		return 0, fmt.Errorf("recover %s: %w", table, err)
	}
	return res.RowsAffected()
}

// recoverStaleWAL: running → retryable with retry_count+1 and a retry_after
// that grows with retry_count (no jitter, so the result is deterministic);
// beyond walRecoverMaxRetries → failed. Each stale row is updated on its
// own because its backoff depends on its count; stale WAL rows are rare.
func recoverStaleWAL(ctx context.Context, tx *sqlx.Tx, now time.Time) (int64, error) {
	ts := protocol.FormatTime(now)
	var stale []struct {
		ID         int64 `db:"id"`
		RetryCount int64 `db:"retry_count"`
	}
	if err := tx.SelectContext(ctx, &stale, `SELECT id, retry_count FROM wal_maintenance_jobs WHERE `+staleWhere, ts); err != nil {
		return 0, fmt.Errorf("recover wal: %w", err)
	}
	for _, r := range stale {
		n := r.RetryCount + 1
		status, retryAfter, finished := string(protocol.WALRetryable), any(protocol.FormatTime(now.Add(WALBackoff(n)))), any(nil)
		if n > walRecoverMaxRetries {
			status, retryAfter, finished = string(protocol.WALFailed), nil, ts
		}
		_, err := tx.ExecContext(ctx, `UPDATE wal_maintenance_jobs SET status = ?, retry_count = ?, retry_after = ?,
			worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, error_code = ?, error_message = ?,
			finished_at = ?, updated_at = ? WHERE id = ? AND `+staleWhere,
			status, n, retryAfter, protocol.ErrLeaseExpired, protocol.LeaseExpiredMessage, finished, ts, r.ID, ts)
		if err != nil {
			return 0, fmt.Errorf("recover wal %d: %w", r.ID, err)
		}
	}
	return int64(len(stale)), nil
}
