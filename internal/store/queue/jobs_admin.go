package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// JobFilter narrows ListJobs; zero fields do not filter.
type JobFilter struct {
	Kind      protocol.JobKind
	Status    protocol.JobStatus
	LibraryID *int64
}

// GetJob returns one job or sqldb.ErrNotFound.
func (s *Store) GetJob(ctx context.Context, id int64) (model.Job, error) {
	return sqldb.GetRow[model.Job](ctx, s.db.R, sqldb.JobRow, `SELECT `+sqldb.JobCols+` FROM jobs WHERE id = ?`, id)
}

// ListJobs pages jobs newest first by the keyset of protocol §6.1:
// ORDER BY created_at DESC, id DESC, next page after the anchor row (the
// last row of the previous page). The row-value comparison lets SQLite walk
// ix_jobs_created (or ix_jobs_library when filtering by library) from the
// anchor with no sort step, so a page costs the same on page 1 and page
// 2,000, and equal timestamps neither repeat nor skip rows.
func (s *Store) ListJobs(ctx context.Context, f JobFilter, after *model.JobAnchor, limit int) ([]model.Job, error) {
	q, args := listJobsQuery(f, after, limit)
	var out []model.Job
	if err := s.db.R.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// listJobsQuery builds the list statement from fixed fragments; every value
// is a parameter.
func listJobsQuery(f JobFilter, after *model.JobAnchor, limit int) (string, []any) {
	var where []string
	var args []any
	if f.LibraryID != nil {
		where = append(where, "library_id = ?")
		args = append(args, *f.LibraryID)
	}
	if f.Kind != "" {
		where = append(where, "kind = ?")
		args = append(args, string(f.Kind))
	}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if after != nil {
		where = append(where, "(created_at, id) < (?, ?)")
		args = append(args, after.CreatedAt, after.ID)
	}
	q := `SELECT ` + sqldb.JobCols + ` FROM jobs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	return q, append(args, limit)
}

// ExplainListJobs returns SQLite's query plan of the ListJobs statement, so
// tests can assert that it walks an index without a temp b-tree.
func (s *Store) ExplainListJobs(ctx context.Context, f JobFilter, after *model.JobAnchor) ([]string, error) {
	q, args := listJobsQuery(f, after, 50)
	return s.db.Explain(ctx, q, args)
}

// CancelJob cancels a job: a pending or retryable job becomes cancelled at
// once; a running one gets cancel_requested and its worker ends it within
// the cancel-check interval. So does a delete job that a killed run left
// with intents: a worker claims it, settles them from the disk, and ends it
// cancelled (protocol §4.2.1). A terminal job is sqldb.ErrConflict with code
// job_terminal. The whole decision is one write transaction, so a job that
// a worker claims concurrently is either cancelled before the claim or
// flagged after it, never missed.
func (s *Store) CancelJob(ctx context.Context, id int64) (model.Job, error) {
	now := s.db.NowText()
	var j model.Job
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &j, `UPDATE jobs SET status = 'cancelled', error_code = ?, error_message = ?,
				worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL,
				finished_at = ?, updated_at = ?
			WHERE id = ? AND status IN ('pending','retryable') AND NOT `+sqldb.UnsettledDelete+` RETURNING `+sqldb.JobCols,
			protocol.ErrCancelled, "cancelled by request", now, now, id)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		err = tx.GetContext(ctx, &j, `UPDATE jobs SET cancel_requested = 1, updated_at = ?
			WHERE id = ? AND (status = 'running' OR `+sqldb.UnsettledDelete+`) RETURNING `+sqldb.JobCols, now, id)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		err = tx.GetContext(ctx, &j, `SELECT `+sqldb.JobCols+` FROM jobs WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return sqldb.MissingRow(sqldb.JobRow, id)
		}
		if err != nil {
			return err
		}
		return &protocol.Error{Code: protocol.CodeJobTerminal, Message: fmt.Sprintf("job %d is already %s", id, j.Status), Err: sqldb.ErrConflict}
	})
	if err != nil {
		return model.Job{}, fmt.Errorf("cancel job: %w", err)
	}
	return j, nil
}
