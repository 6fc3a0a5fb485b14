package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
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
	lease_expires_at = ?, finished_at = NULL, updated_at = ?, lease_epoch = lease_epoch + 1
	WHERE id = (SELECT c.id FROM thumbnail_cleanup_jobs c WHERE ` + cleanupEligible + `
		ORDER BY c.execute_after, c.id LIMIT 1)
	AND status = 'pending' RETURNING *`

// ClaimCleanup recovers stale cleanup rows (running → pending) and claims
// the earliest due cleanup whose group has no pending/running thumbnail.
// It returns nil, nil when nothing is eligible.
func (s *Leases) ClaimCleanup(ctx context.Context, workerID string, lease time.Duration) (*model.CleanupJob, error) {
	c, err := claimRow[model.CleanupJob](ctx, s, claimPath{gate: &s.gates.cleanup, probe: cleanupProbe,
		probeArgs: func(now string) []any { return []any{now, now} },
		recover:   recoverStaleCleanup,
		query:     cleanupClaim,
		args:      func(now, expires string) []any { return []any{workerID, now, expires, now, now} }}, lease)
	if err != nil {
		return nil, fmt.Errorf("claim cleanup: %w", err)
	}
	return c, nil
}

// FinishCleanup ends the cleanup row of claim c as completed with its
// counts (fenced: ErrLeaseLost when c is no longer its live lease).
func (s *Leases) FinishCleanup(ctx context.Context, c model.Fence, deletedFiles, deletedRows int64) error {
	ts := s.db.NowText()
	return s.endLease(ctx, "finish cleanup", c, `UPDATE thumbnail_cleanup_jobs SET status = 'completed', deleted_files = ?,
		deleted_rows = ?, error_code = NULL, error_message = NULL, finished_at = ?, lease_expires_at = NULL,
		updated_at = ? WHERE `+fenceWhere, deletedFiles, deletedRows, ts, ts)
}

// FailCleanup ends the cleanup row of claim c as failed, keeping the
// counts of what it did delete before the error (fenced).
func (s *Leases) FailCleanup(ctx context.Context, c model.Fence, deletedFiles, deletedRows int64, code, message string) error {
	ts := s.db.NowText()
	return s.endLease(ctx, "fail cleanup", c, `UPDATE thumbnail_cleanup_jobs SET status = 'failed', deleted_files = ?,
		deleted_rows = ?, error_code = ?, error_message = ?, finished_at = ?, lease_expires_at = NULL,
		updated_at = ? WHERE `+fenceWhere, deletedFiles, deletedRows, code, message, ts, ts)
}
