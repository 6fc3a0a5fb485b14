package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// Periodic-scan bookkeeping and scan follow-ups: the store side of
// controld's scheduler.

// RequestScheduledScans requests a normal-priority scan of every library
// whose scan_interval_minutes is set and whose last_scan_requested_at is at
// least that old (or unset). last_scan_requested_at becomes now, not
// last+interval, so ticks missed while controld was down produce one scan,
// not one per tick. Each library is its own short transaction, re-checked
// inside it, so two controlds cannot both request the same period.
func (s *Store) RequestScheduledScans(ctx context.Context) ([]RequestOutcome, error) {
	now := s.nowText()
	var due []int64
	if err := s.r.SelectContext(ctx, &due, `SELECT id FROM libraries WHERE scan_interval_minutes > 0
		AND (last_scan_requested_at IS NULL OR last_scan_requested_at <= `+s.dueCutoff()+`) ORDER BY id`, now); err != nil {
		return nil, fmt.Errorf("due scheduled scans: %w", err)
	}
	var out []RequestOutcome
	for _, id := range due {
		var o *RequestOutcome
		err := s.write(ctx, func(tx *sqlx.Tx) error {
			o = nil
			var still bool
			err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM libraries WHERE id = ? AND scan_interval_minutes > 0
				AND (last_scan_requested_at IS NULL OR last_scan_requested_at <= `+s.dueCutoff()+`))`, id, now).Scan(&still)
			if err != nil || !still {
				return err
			}
			r, err := requestJobTx(ctx, tx, JobRequest{Kind: protocol.JobKindScan, LibraryID: sql.NullInt64{Int64: id, Valid: true},
				Priority: protocol.PriorityNormal, Reason: "schedule"}, now)
			o = &r
			return err
		})
		if err != nil {
			return out, fmt.Errorf("scheduled scan of library %d: %w", id, err)
		}
		if o != nil {
			out = append(out, *o)
		}
	}
	return out, nil
}

// dueCutoff is now minus the library's interval, computed from the store
// clock's now (bound as the placeholder), never the database's own clock.
func (s *Store) dueCutoff() string {
	return s.pick(`strftime('%Y-%m-%d %H:%M:%f', ?, '-' || scan_interval_minutes || ' minutes')`,
		`(?::timestamptz - scan_interval_minutes * interval '1 minute')`)
}

// needsFollowUp selects the finished jobs j controld must follow up,
// exactly once each: every finished scan (the hash job after it), and
// every hash job that yielded the single-active slot to a scan (its
// remaining work, requested again).
func (s *Store) needsFollowUp() string {
	return `((j.kind = 'scan' AND j.status IN ('completed','failed','cancelled'))
	OR (j.kind = 'hash' AND j.status = 'completed' AND ` +
		s.pick(`json_extract(j.result, '$.`+protocol.ResultYielded+`') = 1`,
			`(j.result::jsonb ->> '`+protocol.ResultYielded+`') IN ('true', '1')`) + `))
	AND NOT EXISTS (SELECT 1 FROM job_followups f WHERE f.job_id = j.id)`
}

// JobsToFollowUp pages the finished jobs that have no job_followups row
// yet, in id order after afterID.
func (s *Store) JobsToFollowUp(ctx context.Context, afterID int64, limit int) ([]Job, error) {
	out := []Job{}
	err := s.r.SelectContext(ctx, &out, `SELECT j.* FROM jobs j WHERE j.id > ? AND `+s.needsFollowUp()+`
		ORDER BY j.id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("jobs to follow up: %w", err)
	}
	return out, nil
}

// FollowUpFloor returns an id below which every job is finished: the
// oldest pending, running or retryable job's (a retryable job runs again
// and must still be followed up when it ends), or one past the newest job. A
// follow-up pass that starts after reading it may skip, next time, the ids
// below it, so that a long jobs table is not walked twice a second.
func (s *Store) FollowUpFloor(ctx context.Context) (int64, error) {
	var id int64
	err := s.r.GetContext(ctx, &id, `SELECT coalesce((SELECT min(id) FROM jobs WHERE status IN ('pending','running','retryable')),
		(SELECT coalesce(max(id), 0) + 1 FROM jobs))`)
	if err != nil {
		return 0, fmt.Errorf("follow-up floor: %w", err)
	}
	return id, nil
}

// FollowUpJob records that finished job jobID was followed up and, in the
// same transaction, requests the hash job that follows it at normal
// priority: after a completed scan of a library when hashAfterScan is set
// (scan.hash.mode=full), and always after a hash job that yielded, for the
// same target (its work is not lost to a scan). The queue runs scans
// before hashes, so that request waits behind the scan. It is
// exactly-once: a second call (another controld, a restart) finds the row
// and does nothing, returning done=false.
func (s *Store) FollowUpJob(ctx context.Context, jobID int64, hashAfterScan bool) (done bool, hash *RequestOutcome, err error) {
	err = s.write(ctx, func(tx *sqlx.Tx) error {
		done, hash = false, nil
		var j Job
		err := tx.GetContext(ctx, &j, `SELECT * FROM jobs j WHERE j.id = ? AND `+s.needsFollowUp(), jobID)
		if errors.Is(err, sql.ErrNoRows) {
			return followUpRefusal(ctx, tx, jobID)
		}
		if err != nil {
			return err
		}
		now := s.nowText()
		req, hashIt := followUpRequest(j, hashAfterScan)
		res, err := tx.ExecContext(ctx, `INSERT INTO job_followups (job_id, library_id, job_status, hash_requested, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING`, j.ID, j.LibraryID, j.Status, hashIt, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		done = true
		if !hashIt {
			return nil
		}
		if req.LibraryID.Valid {
			var libOK bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM libraries WHERE id = ?)`, req.LibraryID).Scan(&libOK); err != nil || !libOK {
				return err
			}
		}
		r, err := requestJobTx(ctx, tx, req, now)
		hash = &r
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("follow up job %d: %w", jobID, err)
	}
	return done, hash, nil
}

// followUpRequest is the hash request that follows the finished job j, and
// whether there is one.
func followUpRequest(j Job, hashAfterScan bool) (JobRequest, bool) {
	req := JobRequest{Kind: protocol.JobKindHash, LibraryID: j.LibraryID, Priority: protocol.PriorityNormal}
	if j.Kind == protocol.JobKindHash {
		req.Reason = fmt.Sprintf("resume hash %d after it yielded to a scan", j.ID)
		return req, true
	}
	req.Reason = fmt.Sprintf("after scan %d", j.ID)
	return req, hashAfterScan && j.Status == protocol.JobCompleted && j.LibraryID.Valid
}

// followUpRefusal explains why job id cannot be followed up: it does not
// exist (ErrNotFound), or is not a finished scan nor a yielded hash
// (ErrConflict), or was already followed up (nil: done=false).
func followUpRefusal(ctx context.Context, tx *sqlx.Tx, id int64) error {
	var followed bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM job_followups WHERE job_id = ?)`, id).Scan(&followed)
	if err != nil || followed {
		return err
	}
	var kind, status string
	err = tx.QueryRowContext(ctx, `SELECT kind, status FROM jobs WHERE id = ?`, id).Scan(&kind, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%s job %d is %s and not to be followed up: %w", kind, id, status, ErrConflict)
}

// LibrariesNeedingCovers lists the libraries that have present files a
// scan marked as needing a cover (needs_cover=1), for cover admission.
func (s *Store) LibrariesNeedingCovers(ctx context.Context) ([]int64, error) {
	out := []int64{}
	if err := s.r.SelectContext(ctx, &out, `SELECT DISTINCT library_id FROM library_files WHERE needs_cover = 1 AND is_missing = 0 ORDER BY library_id`); err != nil {
		return nil, fmt.Errorf("libraries needing covers: %w", err)
	}
	return out, nil
}
