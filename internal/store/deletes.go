package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// DeleteResult is what a delete job did with one planned copy.
type DeleteResult struct {
	JobID   int64                  `db:"job_id"`
	FileID  int64                  `db:"file_id"`
	Outcome protocol.DeleteOutcome `db:"outcome"`
	Message string                 `db:"message"`
	// TrashPath is where a trashed copy went, relative to its library.
	TrashPath sql.NullString `db:"trash_path"`
	CreatedAt protocol.Time  `db:"created_at"`
}

// DeleteResults returns what a delete job has recorded so far, by file.
func (s *Store) DeleteResults(ctx context.Context, jobID int64) ([]DeleteResult, error) {
	var out []DeleteResult
	err := s.r.SelectContext(ctx, &out, `SELECT job_id, file_id, outcome, message, trash_path, created_at
		FROM delete_outcomes WHERE job_id = ? ORDER BY file_id`, jobID)
	if err != nil {
		return nil, fmt.Errorf("delete results: %w", err)
	}
	return out, nil
}

// RecordDeleteResult stores the outcome of one copy, once (a retried job
// keeps the first). A removed copy's row is marked missing, and a restored
// one present again, in the same transaction, so groups and counts update
// at once; a rescan agrees.
func (s *Store) RecordDeleteResult(ctx context.Context, r DeleteResult) error {
	now := s.nowText()
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO delete_outcomes (job_id, file_id, outcome, message, trash_path, created_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, file_id) DO NOTHING`,
			r.JobID, r.FileID, string(r.Outcome), r.Message, r.TrashPath, now)
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
	})
	if err != nil {
		return fmt.Errorf("record delete result: %w", err)
	}
	return nil
}

// TrashFates returns, by file, what a restore or purge later did with the
// files delete job jobID trashed (restored or purged); a file still in
// the trash is absent.
func (s *Store) TrashFates(ctx context.Context, jobID int64) (map[int64]protocol.DeleteOutcome, error) {
	var rows []struct {
		FileID  int64                  `db:"file_id"`
		Outcome protocol.DeleteOutcome `db:"outcome"`
	}
	err := s.r.SelectContext(ctx, &rows, `SELECT o.file_id, o.outcome FROM delete_plans p
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
