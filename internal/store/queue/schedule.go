package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
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
	now := s.db.NowText()
	var due []int64
	if err := s.db.R.SelectContext(ctx, &due, `SELECT id FROM libraries WHERE scan_interval_minutes > 0
		AND (last_scan_requested_at IS NULL OR last_scan_requested_at <= `+s.dueCutoff()+`) ORDER BY id`, now); err != nil {
		return nil, fmt.Errorf("due scheduled scans: %w", err)
	}
	var out []RequestOutcome
	for _, id := range due {
		var o *RequestOutcome
		err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
			o = nil
			var still bool
			err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM libraries WHERE id = ? AND scan_interval_minutes > 0
				AND (last_scan_requested_at IS NULL OR last_scan_requested_at <= `+s.dueCutoff()+`))`, id, now).Scan(&still)
			if err != nil || !still {
				return err
			}
			r, err := requestJobTx(ctx, tx, JobRequest{Kind: protocol.JobKindScan, LibraryID: &id,
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
	return s.db.Pick(`strftime('%Y-%m-%d %H:%M:%f', ?, '-' || scan_interval_minutes || ' minutes')`,
		`(?::timestamptz - scan_interval_minutes * interval '1 minute')`)
}

// needsFollowUp selects the finished jobs controld must follow up,
// exactly once each: every finished scan (the hash job after it), and
// every hash job that yielded the single-active slot to a scan (its
// remaining work, requested again).
func (s *Store) needsFollowUp() string {
	return `((kind = 'scan' AND status IN ('completed','failed','cancelled'))
	OR (kind = 'hash' AND status = 'completed' AND ` +
		s.db.Pick(`json_extract(result, '$.`+protocol.ResultYielded+`') = 1`,
			`(result::jsonb ->> '`+protocol.ResultYielded+`') IN ('true', '1')`) + `))`
}

// unfollowed selects the finished jobs j that controld has not looked at
// yet (jobs.followed_up, migration 19), through the partial index
// ix_jobs_follow_up. A mark, not an id floor: on PostgreSQL ids are taken
// at INSERT and rows become visible at COMMIT, so a job may finish, or
// even appear, below an id already passed; it is unmarked all the same.
const unfollowed = `j.followed_up = 0 AND j.status IN ('completed','failed','cancelled')`

// JobsToFollowUp pages the finished jobs controld has not looked at yet,
// in id order after afterID: the ones to follow up and the ones with
// nothing to follow up (FollowUpJob marks both). afterID only pages within
// one pass; every pass starts again from 0, and the index holds only the
// unmarked rows, so an idle pass reads nothing.
func (s *Store) JobsToFollowUp(ctx context.Context, afterID int64, limit int) ([]model.Job, error) {
	out := []model.Job{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT j.* FROM jobs j WHERE `+unfollowed+` AND j.id > ?
		ORDER BY j.id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("jobs to follow up: %w", err)
	}
	return out, nil
}

// FollowUpJob follows up finished job jobID and marks it followed_up, in
// one transaction. A job to follow up gets its job_followups row and the
// hash job that follows it, requested at normal priority: after a
// completed scan of a library when hashAfterScan is set
// (scan.hash.mode=full), and always after a hash job that yielded, for the
// same target (its work is not lost to a scan). The queue runs scans
// before hashes, so that request waits behind the scan. A finished job
// with nothing to follow up is only marked. It is exactly-once: done is
// true only for the call that followed the job up; another call (another
// controld, a restart) finds the mark and does nothing.
func (s *Store) FollowUpJob(ctx context.Context, jobID int64, hashAfterScan bool) (done bool, hash *RequestOutcome, err error) {
	err = s.db.Write(ctx, func(tx *sqlx.Tx) error {
		done, hash = false, nil
		var j struct {
			model.Job
			Needs bool `db:"needs"`
		}
		err := tx.GetContext(ctx, &j, `UPDATE jobs SET followed_up = 1 WHERE id = ? AND followed_up = 0
			AND status IN ('completed','failed','cancelled') RETURNING *, CASE WHEN `+s.needsFollowUp()+` THEN 1 ELSE 0 END AS needs`, jobID)
		if errors.Is(err, sql.ErrNoRows) {
			return followUpRefusal(ctx, tx, jobID)
		}
		if err != nil || !j.Needs {
			return err
		}
		now := s.db.NowText()
		req, hashIt := followUpRequest(j.Job, hashAfterScan)
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
		if req.LibraryID != nil {
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
func followUpRequest(j model.Job, hashAfterScan bool) (JobRequest, bool) {
	req := JobRequest{Kind: protocol.JobKindHash, LibraryID: j.LibraryID, Priority: protocol.PriorityNormal}
	if j.Kind == protocol.JobKindHash {
		req.Reason = fmt.Sprintf("resume hash %d after it yielded to a scan", j.ID)
		return req, true
	}
	req.Reason = fmt.Sprintf("after scan %d", j.ID)
	return req, hashAfterScan && j.Status == protocol.JobCompleted && j.LibraryID != nil
}

// followUpRefusal explains why job id cannot be followed up: it does not
// exist (sqldb.ErrNotFound), or has not finished (sqldb.ErrConflict), or was already
// marked (nil: done=false).
func followUpRefusal(ctx context.Context, tx *sqlx.Tx, id int64) error {
	var kind, status string
	var marked bool
	err := tx.QueryRowContext(ctx, `SELECT kind, status, followed_up = 1 FROM jobs WHERE id = ?`, id).Scan(&kind, &status, &marked)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", id, sqldb.ErrNotFound)
	}
	if err != nil || marked {
		return err
	}
	return fmt.Errorf("%s job %d is %s and not to be followed up: %w", kind, id, status, sqldb.ErrConflict)
}

// LibrariesNeedingCovers lists the libraries that have present files a
// scan marked as needing a cover (needs_cover=1), for cover admission.
func (s *Store) LibrariesNeedingCovers(ctx context.Context) ([]int64, error) {
	out := []int64{}
	if err := s.db.R.SelectContext(ctx, &out, `SELECT DISTINCT library_id FROM library_files WHERE needs_cover = 1 AND is_missing = 0 ORDER BY library_id`); err != nil {
		return nil, fmt.Errorf("libraries needing covers: %w", err)
	}
	return out, nil
}
