package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/backoff"
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

// staleWhere is the protocol's definition of a stale lease.
const staleWhere = `status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= ?)`

// recoverStaleJobs: running → retryable; worker_id is cleared so that no
// former owner can heartbeat or finish the row again (and no fenced data
// write of it passes). Each stale row's holder is judged first
// (crashes.go): a crashed holder's row gets lease_expired and the attempt
// counts; a live holder's (it lost the database, or stopped) gets
// lease_lost, which the retry policy does not count; an undecided holder's
// row waits for a later pass. retry_after is stamped later by controld
// (RequeueRetryableJobs), since workerd's recover path may not write it
// (protocol §7.1). The lost work's scan session, which its worker can no
// longer close, is closed in the same transaction: failed with
// lease_expired, so a library never shows a scan running that nobody runs.
func recoverStaleJobs(ctx context.Context, tx *sqlx.Tx, now time.Time) (int64, error) {
	ts := protocol.FormatTime(now)
	stale, err := staleHolders(ctx, tx, "jobs", ts)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for _, h := range stale {
		code, msg := protocol.ErrLeaseExpired, protocol.LeaseExpiredMessage
		switch h.verdict(now) {
		case holderUndecided:
			continue
		case holderLost:
			code, msg = protocol.ErrLeaseLost, protocol.LeaseLostMessage
		}
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'retryable', worker_id = NULL,
			worker_heartbeat_at = NULL, lease_expires_at = NULL, error_code = ?, error_message = ?, updated_at = ?
			WHERE id = ? AND `+staleWhere, code, msg, ts, h.ID, ts)
		if err != nil {
			return 0, fmt.Errorf("recover job %d: %w", h.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n > 0 {
			ids = append(ids, h.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	q, args, err := sqlx.In(`UPDATE scan_sessions SET status = 'failed', error_code = ?, error_message = ?, finished_at = ?
		WHERE status = 'running' AND job_id IN (?)`, protocol.ErrLeaseExpired, RecoveredScanMessage, ts, ids)
	if err == nil {
		_, err = tx.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, fmt.Errorf("recover jobs: scan sessions: %w", err)
	}
	return int64(len(ids)), nil
}

// RecoveredScanMessage is written on the running scan session of a job
// whose stale lease was recovered.
const RecoveredScanMessage = "scan session closed: its job's lease expired"

// MaxRecoveries is how often a thumbnail or cleanup row may lose its worker
// to a crash (a stale lease whose holder died, see crashes.go; not a
// graceful release, not an outage) before it fails for good: a row whose
// work kills workerd would otherwise be claimed after every restart.
const MaxRecoveries = 3

// recoverStaleThumbnails: running → pending, lease fields cleared, once
// its holder is judged (crashes.go); the third recovery from a crashed
// holder fails the row with render_crashed instead. retry_after
// stays NULL, so the failed-cover retry does not bring it back; a
// regenerate request does.
func recoverStaleThumbnails(ctx context.Context, tx *sqlx.Tx, now time.Time) (int64, error) {
	return recoverStaleCounted(ctx, tx, "thumbnails", protocol.ErrRenderCrashed, now)
}

// recoverStaleCleanup: as recoverStaleThumbnails, with cleanup_crashed.
func recoverStaleCleanup(ctx context.Context, tx *sqlx.Tx, now time.Time) (int64, error) {
	return recoverStaleCounted(ctx, tx, "thumbnail_cleanup_jobs", protocol.ErrCleanupCrashed, now)
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
		status, retryAfter, finished := string(protocol.WALRetryable), any(protocol.FormatTime(now.Add(backoff.WAL(n)))), any(nil)
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
