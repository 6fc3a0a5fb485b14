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

// deadClaims matches the claims of ended jobs, which hold nothing.
const deadClaims = `job_id IN (SELECT id FROM jobs WHERE status IN ('completed', 'failed', 'cancelled'))`

// claimPlanFiles claims every file plan planID names, keepers included, for
// job jobID, in the transaction that creates the job. A file claimed by
// another unfinished job refuses the whole plan with files_busy, naming
// that job's plan: two plans with swapped keepers, or a restore and a purge
// of one trash, never run at once. Claims of ended jobs are dead; they are
// cleared here, where the next plan needs their files.
//
// The primary key on file_id is the authority: two authorizations racing
// on PostgreSQL both insert, and the second skips the rows the first holds
// (ON CONFLICT DO NOTHING waits for the first to commit), counts fewer rows
// than its plan names, and is refused.
func claimPlanFiles(ctx context.Context, tx *sqlx.Tx, planID, jobID int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM delete_claims WHERE file_id IN
		(SELECT file_id FROM delete_plan_files WHERE plan_id = ?) AND `+deadClaims, planID); err != nil {
		return fmt.Errorf("clear dead claims: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO delete_claims (file_id, plan_id, job_id)
		SELECT file_id, ?, ? FROM delete_plan_files WHERE plan_id = ? ON CONFLICT (file_id) DO NOTHING`, planID, jobID, planID)
	if err != nil {
		return fmt.Errorf("claim plan files: %w", err)
	}
	got, err := res.RowsAffected()
	if err != nil {
		return err
	}
	var want int64
	if err := tx.GetContext(ctx, &want, `SELECT count(*) FROM delete_plan_files WHERE plan_id = ?`, planID); err != nil {
		return err
	}
	if got == want {
		return nil
	}
	return busyFiles(ctx, tx, planID)
}

// busyFiles is the files_busy refusal of plan planID, naming one file and
// the plan whose job holds it.
func busyFiles(ctx context.Context, tx *sqlx.Tx, planID int64) error {
	var other struct {
		FileID int64 `db:"file_id"`
		PlanID int64 `db:"plan_id"`
		JobID  int64 `db:"job_id"`
	}
	err := tx.GetContext(ctx, &other, `SELECT c.file_id, c.plan_id, c.job_id FROM delete_plan_files f
		JOIN delete_claims c ON c.file_id = f.file_id AND c.plan_id <> ? WHERE f.plan_id = ? ORDER BY c.file_id LIMIT 1`, planID, planID)
	msg := fmt.Sprintf("a file of plan %d is held by another plan whose job has not finished", planID)
	if err == nil {
		msg = fmt.Sprintf("file %d is held by plan %d (job %d), which has not finished: wait for it or cancel it",
			other.FileID, other.PlanID, other.JobID)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return &protocol.Error{Code: protocol.CodeFilesBusy, Message: msg, Err: sqldb.ErrConflict}
}

// filesBusy reports whether a live claim holds any of the files.
func filesBusy(ctx context.Context, tx *sqlx.Tx, files []model.PlanFile) (bool, error) {
	for _, f := range files {
		var busy bool
		err := tx.GetContext(ctx, &busy, `SELECT EXISTS (SELECT 1 FROM delete_claims WHERE file_id = ? AND NOT `+deadClaims+`)`, f.FileID)
		if err != nil || busy {
			return busy, err
		}
	}
	return false, nil
}

// checkPlanBinding refuses a plan whose libraries are not where the plan
// saw them: deleted, moved, or an id reused for another folder.
func checkPlanBinding(ctx context.Context, q sqlx.QueryerContext, planID int64) error {
	var bad []struct {
		LibraryID int64          `db:"library_id"`
		Planned   sql.NullString `db:"library_path"`
		Now       sql.NullString `db:"path"`
	}
	err := sqlx.SelectContext(ctx, q, &bad, `SELECT DISTINCT f.library_id, f.library_path, l.path FROM delete_plan_files f
		LEFT JOIN libraries l ON l.id = f.library_id
		WHERE f.plan_id = ? AND (l.id IS NULL OR (f.library_path IS NOT NULL AND f.library_path <> l.path))
		ORDER BY f.library_id`, planID)
	if err != nil || len(bad) == 0 {
		return err
	}
	b := bad[0]
	msg := fmt.Sprintf("plan %d: library %d no longer exists", planID, b.LibraryID)
	if b.Now.Valid {
		msg = fmt.Sprintf("plan %d: library %d is now %s, not %s as planned", planID, b.LibraryID, b.Now.String, b.Planned.String)
	}
	return &protocol.Error{Code: protocol.CodePlanInvalid, Message: msg, Err: sqldb.ErrConflict}
}

// CheckPlanBinding is plan_invalid when a plan's libraries are no longer
// the folders it was made for; workerd checks it before it moves anything.
func (s *Store) CheckPlanBinding(ctx context.Context, planID int64) error {
	return checkPlanBinding(ctx, s.db.R, planID)
}
