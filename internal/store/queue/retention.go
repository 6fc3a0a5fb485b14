package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// Retention deletes old terminal rows in small batches: every call is one
// short write transaction that deletes at most limit rows, so the write
// lock is never held long and workers keep claiming in between. Callers
// loop until a call deletes fewer than limit rows.

// RetentionPolicy says what is old enough to delete.
type RetentionPolicy struct {
	// JobsBefore: completed and cancelled jobs finished before it go.
	JobsBefore time.Time
	// FailedBefore: failed jobs, and failed wal/cleanup rows, finished
	// before it go (the caller keeps them ≥ 7 days).
	FailedBefore time.Time
	// MaintenanceBefore: completed wal and cleanup rows finished before it
	// go.
	MaintenanceBefore time.Time
	// KeepSessions finished scan sessions are kept per library (the newest
	// ones); older finished sessions go, with their errors.
	KeepSessions int
}

// DeleteOldJobs deletes up to limit terminal jobs older than the policy. A
// row without finished_at (written by hand) counts from updated_at. Rows
// referencing a deleted job (scan_sessions.job_id) are set to NULL by the
// schema; job_followups rows go with their job. A delete job bound to a
// plan stays: its outcomes say what is in the trash, and a restore needs
// them.
func (s *Store) DeleteOldJobs(ctx context.Context, p RetentionPolicy, limit int) (int64, error) {
	n, err := s.deleteBatch(ctx, `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs
		WHERE ((status IN ('completed','cancelled') AND coalesce(finished_at, updated_at) < ?)
		   OR (status = 'failed' AND coalesce(finished_at, updated_at) < ?))
		  AND id NOT IN (SELECT job_id FROM delete_plans WHERE job_id IS NOT NULL)
		ORDER BY id LIMIT ?)`, protocol.FormatTime(p.JobsBefore), protocol.FormatTime(p.FailedBefore), limit)
	if err != nil {
		return 0, fmt.Errorf("delete old jobs: %w", err)
	}
	return n, nil
}

// DeleteOldMaintenance deletes up to limit finished wal_maintenance_jobs
// rows and up to limit finished thumbnail_cleanup_jobs rows.
func (s *Store) DeleteOldMaintenance(ctx context.Context, p RetentionPolicy, limit int) (int64, error) {
	done, failed := protocol.FormatTime(p.MaintenanceBefore), protocol.FormatTime(p.FailedBefore)
	var total int64
	for _, table := range []string{"wal_maintenance_jobs", "thumbnail_cleanup_jobs"} {
		n, err := s.deleteBatch(ctx, `DELETE FROM `+table+` WHERE id IN (SELECT id FROM `+table+`
			WHERE (status = 'completed' AND coalesce(finished_at, updated_at) < ?)
			   OR (status = 'failed' AND coalesce(finished_at, updated_at) < ?)
			ORDER BY id LIMIT ?)`, done, failed, limit)
		if err != nil {
			return total, fmt.Errorf("delete old %s: %w", table, err)
		}
		total += n
	}
	return total, nil
}

// prunableSessions selects finished scan sessions beyond the newest keep
// of their library (running sessions count towards keep but are never
// pruned).
const prunableSessions = `SELECT id FROM (SELECT id, status,
		row_number() OVER (PARTITION BY library_id ORDER BY id DESC) AS rn FROM scan_sessions) AS ranked
	WHERE rn > ? AND status <> 'running'`

// PruneScanSessions deletes old scan sessions: first up to limit of their
// scan_errors, and only when none are left, up to limit sessions. A
// session with thousands of errors thus goes over several calls instead of
// one long cascade. It returns the rows deleted (errors + sessions).
func (s *Store) PruneScanSessions(ctx context.Context, p RetentionPolicy, limit int) (int64, error) {
	keep := max(p.KeepSessions, 0)
	n, err := s.deleteBatch(ctx, `DELETE FROM scan_errors WHERE id IN (SELECT id FROM scan_errors
		WHERE session_id IN (`+prunableSessions+`) ORDER BY id LIMIT ?)`, keep, limit)
	if err != nil || n == int64(limit) {
		return n, retentionErr("prune scan errors", err)
	}
	m, err := s.deleteBatch(ctx, `DELETE FROM scan_sessions WHERE id IN (SELECT id FROM (`+prunableSessions+`) AS p
		WHERE NOT EXISTS (SELECT 1 FROM scan_errors e WHERE e.session_id = p.id) ORDER BY id LIMIT ?)`, keep, limit)
	return n + m, retentionErr("prune scan sessions", err)
}

func (s *Store) deleteBatch(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

func retentionErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
