package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Lease paths of thumbnail_cleanup_jobs (protocol §4.4, §7.3).

// cleanupEligible: due, and no pending/running thumbnail in the cleanup's
// group (a cleanup must not delete a cover that is still being rendered).
// A thumbnail is in the group `library:<id>` by its group_key, in `file:<id>`
// by its file_id, and in `shards:<n>` always (a layout change concerns
// every cover). Active rows are bounded by the queue capacity, so the
// search over them stays small.
const cleanupEligible = `c.status = 'pending' AND c.execute_after <= ? AND NOT EXISTS (
	SELECT 1 FROM thumbnails t WHERE t.status IN ('pending','running')
	AND (t.group_key = c.group_key OR c.group_key = 'file:' || t.file_id OR c.group_key LIKE 'shards:%'))`

const cleanupProbe = `SELECT EXISTS (SELECT 1 FROM thumbnail_cleanup_jobs c WHERE ` + cleanupEligible + `)
	, EXISTS (SELECT 1 FROM thumbnail_cleanup_jobs WHERE ` + staleWhere + `)`

const cleanupClaim = `UPDATE thumbnail_cleanup_jobs SET status = 'running', worker_id = ?, worker_heartbeat_at = ?,
	lease_expires_at = ?, finished_at = NULL, updated_at = ?
	WHERE id = (SELECT c.id FROM thumbnail_cleanup_jobs c WHERE ` + cleanupEligible + `
		ORDER BY c.execute_after, c.id LIMIT 1)
	AND status = 'pending' RETURNING *`

// ClaimCleanup recovers stale cleanup rows (running → pending) and claims
// the earliest due cleanup whose group has no pending/running thumbnail.
// It returns nil, nil when nothing is eligible.
func (s *Store) ClaimCleanup(ctx context.Context, workerID string, lease time.Duration) (*CleanupJob, error) {
	var c *CleanupJob
	err := s.claim(ctx, claimPath{gate: &s.gates.cleanup, probe: cleanupProbe,
		probeArgs: func(now string) []any { return []any{now, now} },
		recover:   recoverStaleCleanup,
		claim: func(q sqlx.QueryerContext, now, expires string) error {
			c = nil
			var row CleanupJob
			err := sqlx.GetContext(ctx, q, &row, cleanupClaim, workerID, now, expires, now, now)
			if err == nil {
				c = &row
			}
			return err
		}}, lease)
	if err != nil {
		return nil, fmt.Errorf("claim cleanup: %w", err)
	}
	return c, nil
}

// HeartbeatCleanup extends the lease of a cleanup row this worker owns.
func (s *Store) HeartbeatCleanup(ctx context.Context, id int64, workerID string, lease time.Duration) error {
	return s.heartbeat(ctx, "thumbnail_cleanup_jobs", id, workerID, lease)
}

// FinishCleanup ends a cleanup row this worker owns as completed with its
// counts.
func (s *Store) FinishCleanup(ctx context.Context, id int64, workerID string, deletedFiles, deletedRows int64) error {
	err := s.writeOne(ctx, func(q sqlx.ExtContext) error {
		ts := s.nowText()
		return ownedExec(ctx, q, `UPDATE thumbnail_cleanup_jobs SET status = 'completed', deleted_files = ?,
			deleted_rows = ?, error_code = NULL, error_message = NULL, finished_at = ?, lease_expires_at = NULL,
			updated_at = ? WHERE id = ? AND worker_id = ? AND status = 'running'`,
			deletedFiles, deletedRows, ts, ts, id, workerID)
	})
	return ownerErr("finish cleanup", id, err)
}

// FailCleanup ends a cleanup row this worker owns as failed, keeping the
// counts of what it did delete before the error.
func (s *Store) FailCleanup(ctx context.Context, id int64, workerID string, deletedFiles, deletedRows int64, code, message string) error {
	err := s.writeOne(ctx, func(q sqlx.ExtContext) error {
		ts := s.nowText()
		return ownedExec(ctx, q, `UPDATE thumbnail_cleanup_jobs SET status = 'failed', deleted_files = ?,
			deleted_rows = ?, error_code = ?, error_message = ?, finished_at = ?, lease_expires_at = NULL,
			updated_at = ? WHERE id = ? AND worker_id = ? AND status = 'running'`,
			deletedFiles, deletedRows, code, message, ts, ts, id, workerID)
	})
	return ownerErr("fail cleanup", id, err)
}

// ReleaseCleanup hands a cleanup row back on graceful shutdown: running →
// pending.
func (s *Store) ReleaseCleanup(ctx context.Context, id int64, workerID string) error {
	return s.release(ctx, "thumbnail_cleanup_jobs", id, workerID)
}
