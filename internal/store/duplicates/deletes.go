package duplicates

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

// DeleteResults returns what a delete job has recorded so far, by file.
func (s *Store) DeleteResults(ctx context.Context, jobID int64) ([]model.DeleteResult, error) {
	var out []model.DeleteResult
	err := s.db.R.SelectContext(ctx, &out, `SELECT job_id, file_id, outcome, message, trash_path, created_at
		FROM delete_outcomes WHERE job_id = ? ORDER BY file_id`, jobID)
	if err != nil {
		return nil, fmt.Errorf("delete results: %w", err)
	}
	return out, nil
}

// DeleteIntent is where a delete job is about to move a file: recorded
// before the move, removed with the outcome.
type DeleteIntent struct {
	FileID int64 `db:"file_id"`
	// TrashPath is relative to the file's library.
	TrashPath string `db:"trash_path"`
}

// DeleteIntents returns the intents of a job that no outcome settled yet.
func (s *Store) DeleteIntents(ctx context.Context, jobID int64) ([]DeleteIntent, error) {
	var out []DeleteIntent
	err := s.db.R.SelectContext(ctx, &out, `SELECT file_id, trash_path FROM delete_intents WHERE job_id = ? ORDER BY file_id`, jobID)
	if err != nil {
		return nil, fmt.Errorf("delete intents: %w", err)
	}
	return out, nil
}

// RecordDeleteIntents records, before any of them moves, where the job is
// about to move each file. Like every write for the job, it is refused
// (sqldb.ErrNotOwner) unless the job is still running under this worker.
func (s *Store) RecordDeleteIntents(ctx context.Context, job model.Job, intents []DeleteIntent) error {
	now := s.db.NowText()
	err := s.db.Fenced(ctx, job.Fence(), func(tx *sqlx.Tx) error {
		for _, in := range intents {
			if _, err := tx.ExecContext(ctx, `INSERT INTO delete_intents (job_id, file_id, trash_path, created_at)
				VALUES (?, ?, ?, ?) ON CONFLICT (job_id, file_id) DO NOTHING`, job.ID, in.FileID, in.TrashPath, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record delete intents of job %d: %w", job.ID, err)
	}
	return nil
}

// DropDeleteIntents removes intents whose file never moved.
func (s *Store) DropDeleteIntents(ctx context.Context, job model.Job, fileIDs []int64) error {
	err := s.db.Fenced(ctx, job.Fence(), func(tx *sqlx.Tx) error {
		for _, id := range fileIDs {
			if _, err := tx.ExecContext(ctx, `DELETE FROM delete_intents WHERE job_id = ? AND file_id = ?`, job.ID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop delete intents of job %d: %w", job.ID, err)
	}
	return nil
}

// RecordDeleteResult stores the outcome of one copy; see RecordDeleteResults.
func (s *Store) RecordDeleteResult(ctx context.Context, job model.Job, r model.DeleteResult) error {
	return s.RecordDeleteResults(ctx, job, []model.DeleteResult{r})
}

// RecordDeleteResults stores the outcomes of copies in one transaction,
// once each (a retried job keeps the first), and settles their intents. A
// removed copy's row is marked missing, and a restored one present again,
// in the same transaction, so groups and counts update at once; a rescan
// agrees. A worker that no longer owns the job writes nothing
// (sqldb.ErrLeaseLost, an sqldb.ErrNotOwner): the job's new owner reconciles the files from the disk.
func (s *Store) RecordDeleteResults(ctx context.Context, job model.Job, results []model.DeleteResult) error {
	now := s.db.NowText()
	err := s.db.Fenced(ctx, job.Fence(), func(tx *sqlx.Tx) error {
		for _, r := range results {
			if err := recordDeleteResult(ctx, tx, job.ID, r, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record delete results of job %d: %w", job.ID, err)
	}
	return nil
}

func recordDeleteResult(ctx context.Context, tx *sqlx.Tx, jobID int64, r model.DeleteResult, now string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM delete_intents WHERE job_id = ? AND file_id = ?`, jobID, r.FileID); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO delete_outcomes (job_id, file_id, outcome, message, trash_path, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, file_id) DO NOTHING`,
		jobID, r.FileID, string(r.Outcome), r.Message, r.TrashPath, now)
	if err != nil {
		return err
	}
	switch n, _ := res.RowsAffected(); {
	case n == 0:
		return nil
	case r.Outcome.Removed():
		_, err = tx.ExecContext(ctx, `UPDATE library_files SET is_missing = 1, missing_since = ?, updated_at = ?
			WHERE id = ? AND is_missing = 0`, now, now, r.FileID)
	case r.Outcome == protocol.OutcomeRestored:
		_, err = tx.ExecContext(ctx, `UPDATE library_files SET is_missing = 0, missing_since = NULL, updated_at = ?
			WHERE id = ? AND is_missing = 1`, now, r.FileID)
	}
	return err
}

// DeleteGate is what a delete job reads again before each copy moves: its
// library's permissions, and whether its claim is still the live lease.
type DeleteGate struct {
	AllowDelete bool `db:"allow_delete"`
	AllowUnlink bool `db:"allow_unlink"`
	Owned       bool `db:"owned"`
}

// ReadDeleteGate reads the gate of one copy in one query; a library that
// no longer exists is library_not_found.
func (s *Store) ReadDeleteGate(ctx context.Context, job model.Job, libraryID int64) (DeleteGate, error) {
	f := job.Fence()
	var g DeleteGate
	err := s.db.R.GetContext(ctx, &g, `SELECT allow_delete, allow_unlink,
		EXISTS (SELECT 1 FROM jobs WHERE `+sqldb.FenceWhere+`) AS owned
		FROM libraries WHERE id = ?`, append(sqldb.FenceArgs(f, s.db.NowText()), libraryID)...)
	if errors.Is(err, sql.ErrNoRows) {
		return g, sqldb.MissingRow(sqldb.LibraryRow, libraryID)
	}
	return g, err
}

// CheckDeleteOwner is sqldb.ErrLeaseLost unless the job's claim is still its
// live lease (Fence): workerd asks before it moves a file back or unlinks
// one, so a worker that lost its lease (frozen, then thawed) does not undo
// what the job's new owner settled.
func (s *Store) CheckDeleteOwner(ctx context.Context, job model.Job) error {
	return s.db.CheckFence(ctx, s.db.R, job.Fence())
}

// TrashFates returns, by file, what a restore or purge later did with the
// files delete job jobID trashed (restored or purged); a file still in
// the trash is absent.
func (s *Store) TrashFates(ctx context.Context, jobID int64) (map[int64]protocol.DeleteOutcome, error) {
	var rows []struct {
		FileID  int64                  `db:"file_id"`
		Outcome protocol.DeleteOutcome `db:"outcome"`
	}
	err := s.db.R.SelectContext(ctx, &rows, `SELECT o.file_id, o.outcome FROM delete_plans p
		JOIN delete_outcomes o ON o.job_id = p.job_id
		WHERE p.trash_job_id = ? AND o.outcome IN ('restored', 'purged') ORDER BY o.job_id`, jobID)
	if err != nil {
		return nil, fmt.Errorf("trash fates: %w", err)
	}
	out := make(map[int64]protocol.DeleteOutcome, len(rows))
	for _, r := range rows {
		out[r.FileID] = r.Outcome
	}
	return out, nil
}
