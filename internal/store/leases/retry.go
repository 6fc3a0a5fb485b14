package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/backoff"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"

	"github.com/bindery-nas/bindery/protocol"
)

// jobRequeueScanLimit bounds the retryable rows one requeue pass reads.
const jobRequeueScanLimit = 500

// RequeueRetryableJobs is controld's retry policy for the jobs table (issue
// 3 item 5), in one write transaction:
//   - a retryable row without retry_after gets one: now for a row released
//     by a shutting-down worker (worker_shutdown), else now + JobBackoff;
//   - a retryable row with cancel_requested ends cancelled, unless it is a
//     delete job with unsettled intents: that one runs again, and the
//     worker that claims it settles them and ends it cancelled;
//   - a retryable row at attempt ≥ maxAttempts ends failed with
//     max_attempts_exceeded (shutdown releases and lease_lost recoveries,
//     a live worker's outage, do not count as attempts);
//   - a retryable row whose retry_after passed goes back to pending with
//     attempt+1, scan/hash only while the single-active slot is free.
func (s *Leases) RequeueRetryableJobs(ctx context.Context, maxAttempts int) (requeued, failed int64, err error) {
	if maxAttempts < 1 {
		maxAttempts = 1
	}
	err = s.db.Write(ctx, func(tx *sqlx.Tx) error {
		requeued, failed = 0, 0
		now := s.db.Now()
		if err := stampRetryAfter(ctx, tx, now); err != nil {
			return err
		}
		if err := endRetryable(ctx, tx, now, maxAttempts, &failed); err != nil {
			return err
		}
		return requeueDue(ctx, tx, now, &requeued)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("requeue retryable jobs: %w", err)
	}
	return requeued, failed, nil
}

func stampRetryAfter(ctx context.Context, tx *sqlx.Tx, now time.Time) error {
	var rows []struct {
		ID        int64   `db:"id"`
		Attempt   int64   `db:"attempt"`
		ErrorCode *string `db:"error_code"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT id, attempt, error_code FROM jobs
		WHERE status = 'retryable' AND retry_after IS NULL LIMIT ?`, jobRequeueScanLimit); err != nil {
		return fmt.Errorf("stamp retry_after: %w", err)
	}
	for _, r := range rows {
		at := now
		if r.ErrorCode == nil || *r.ErrorCode != protocol.ErrWorkerShutdown {
			at = now.Add(backoff.Job(r.Attempt))
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET retry_after = ?, updated_at = ? WHERE id = ?`,
			protocol.FormatTime(at), protocol.FormatTime(now), r.ID); err != nil {
			return fmt.Errorf("stamp retry_after %d: %w", r.ID, err)
		}
	}
	return nil
}

func endRetryable(ctx context.Context, tx *sqlx.Tx, now time.Time, maxAttempts int, failed *int64) error {
	ts := protocol.FormatTime(now)
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'cancelled', error_code = ?,
		error_message = 'cancel requested while waiting for a retry', retry_after = NULL,
		lease_expires_at = NULL, finished_at = ?, updated_at = ?
		WHERE status = 'retryable' AND cancel_requested = 1 AND NOT `+sqldb.UnsettledDelete, protocol.ErrCancelled, ts, ts); err != nil {
		return fmt.Errorf("cancel retryable: %w", err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'failed', error_code = ?,
		error_message = 'gave up after ' || attempt || ' attempts; last error: ' || coalesce(error_code, 'unknown'),
		retry_after = NULL, lease_expires_at = NULL, finished_at = ?, updated_at = ?
		WHERE status = 'retryable' AND attempt >= ? AND coalesce(error_code, '') NOT IN (?, ?)`,
		protocol.ErrMaxAttemptsExceeded, ts, ts, maxAttempts, protocol.ErrWorkerShutdown, protocol.ErrLeaseLost)
	if err != nil {
		return fmt.Errorf("fail exhausted: %w", err)
	}
	*failed, err = res.RowsAffected()
	return err
}

func requeueDue(ctx context.Context, tx *sqlx.Tx, now time.Time, requeued *int64) error {
	ts := protocol.FormatTime(now)
	var due []struct {
		ID        int64            `db:"id"`
		Kind      protocol.JobKind `db:"kind"`
		ErrorCode *string          `db:"error_code"`
	}
	if err := tx.SelectContext(ctx, &due, `SELECT id, kind, error_code FROM jobs
		WHERE status = 'retryable' AND retry_after <= ? ORDER BY priority, created_at, id LIMIT ?`,
		ts, jobRequeueScanLimit); err != nil {
		return fmt.Errorf("due retryable: %w", err)
	}
	var active int
	if err := tx.GetContext(ctx, &active, `SELECT count(*) FROM jobs
		WHERE status IN ('pending','running') AND kind IN ('scan','hash')`); err != nil {
		return fmt.Errorf("single-active slot: %w", err)
	}
	for _, j := range due {
		if j.Kind == protocol.JobKindScan || j.Kind == protocol.JobKindHash {
			if active > 0 {
				continue
			}
			active++
		}
		bump := 1
		if j.ErrorCode != nil && (*j.ErrorCode == protocol.ErrWorkerShutdown || *j.ErrorCode == protocol.ErrLeaseLost) {
			bump = 0 // not the job's fault: a shutdown, or an outage of a live worker
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'pending', attempt = attempt + ?,
			retry_after = NULL, updated_at = ? WHERE id = ? AND status = 'retryable'`, bump, ts, j.ID); err != nil {
			return fmt.Errorf("requeue job %d: %w", j.ID, err)
		}
		*requeued++
	}
	return nil
}

// RequeueFailedThumbnails moves failed thumbnail rows whose retry_after has
// passed back to pending (protocol §4.3, a controld path). Only the newest
// row of a (file_id, format) is requeued, and only when that file has no
// pending/running row, so ux_thumbnails_active_file always holds. A failed
// row with retry_after NULL has given up and stays failed.
func (s *Leases) RequeueFailedThumbnails(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		ts := s.db.NowText()
		res, err := tx.ExecContext(ctx, `UPDATE thumbnails SET status = 'pending', retry_after = NULL,
			finished_at = NULL, worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, updated_at = ?
			WHERE status = 'failed' AND retry_after IS NOT NULL AND retry_after <= ?
			AND id = (SELECT max(b.id) FROM thumbnails b WHERE b.file_id = thumbnails.file_id AND b.format = thumbnails.format)
			AND NOT EXISTS (SELECT 1 FROM thumbnails a WHERE a.file_id = thumbnails.file_id
				AND a.format = thumbnails.format AND a.status IN ('pending','running'))`, ts, ts)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("requeue failed thumbnails: %w", err)
	}
	return n, nil
}
