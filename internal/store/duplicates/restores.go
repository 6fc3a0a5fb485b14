package duplicates

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// inTrashQuery selects the files delete job ?1 (of plan ?2) trashed, or
// may have (an intent no run of the job reconciled), that no restore or
// purge has since taken out of its trash. The restore or purge verifies
// each in the trash before it acts.
const inTrashQuery = `SELECT f.seq, f.group_seq, f.file_id, f.library_id, f.relative_path, f.decision,
		f.size_bytes, f.mtime_ns, f.hash_algorithm, f.content_hash, f.library_path
	FROM delete_plan_files f
	WHERE f.plan_id = ?2 AND (EXISTS (SELECT 1 FROM delete_outcomes o WHERE o.job_id = ?1 AND o.file_id = f.file_id AND o.outcome = 'trashed')
		OR EXISTS (SELECT 1 FROM delete_intents i WHERE i.job_id = ?1 AND i.file_id = f.file_id))
	  AND f.file_id NOT IN (SELECT ro.file_id FROM delete_plans rp
		JOIN delete_outcomes ro ON ro.job_id = rp.job_id
		WHERE rp.trash_job_id = ?1 AND ro.outcome IN ('restored', 'purged'))
	ORDER BY f.seq`

// CreateRestore authorizes moving back what delete job deleteJobID
// trashed: all of it, or the listed files. It is a plan like any other
// (action restore, one row per file with the identity the file had when
// it was trashed) bound at once to a new delete job, which it returns.
func (s *Store) CreateRestore(ctx context.Context, deleteJobID int64, fileIDs []int64) (model.Job, error) {
	now := protocol.FormatTime(s.db.Now())
	var job model.Job
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		var original model.Plan
		err := tx.GetContext(ctx, &original, `SELECT `+planCols+` FROM delete_plans WHERE job_id = ? AND action = 'trash'`, deleteJobID)
		if errors.Is(err, sql.ErrNoRows) {
			return sqldb.MissingRow(sqldb.JobRow, deleteJobID)
		}
		if err != nil {
			return err
		}
		var files []model.PlanFile
		if err := tx.SelectContext(ctx, &files, inTrashQuery, deleteJobID, original.ID); err != nil {
			return err
		}
		files, err = pickTrashed(files, fileIDs, deleteJobID)
		if err != nil {
			return err
		}
		job, err = insertTrashPlan(ctx, tx, protocol.ActionRestore, deleteJobID, files, now)
		return err
	})
	if err != nil {
		return model.Job{}, fmt.Errorf("create restore: %w", err)
	}
	return job, nil
}

// pickTrashed keeps the trashed files that ids lists (all when ids is
// empty); an id that was not trashed is an error.
func pickTrashed(trashed []model.PlanFile, ids []int64, jobID int64) ([]model.PlanFile, error) {
	if len(trashed) == 0 {
		return nil, &protocol.Error{Code: protocol.CodeNotInTrash,
			Message: "job " + strconv.FormatInt(jobID, 10) + " has nothing in the trash"}
	}
	if len(ids) == 0 {
		return trashed, nil
	}
	out := make([]model.PlanFile, 0, len(ids))
	for _, id := range ids {
		i := slices.IndexFunc(trashed, func(f model.PlanFile) bool { return f.FileID == id })
		if i < 0 {
			return nil, &protocol.Error{Code: protocol.CodeNotInTrash,
				Message: "file " + strconv.FormatInt(id, 10) + " was not trashed by job " + strconv.FormatInt(jobID, 10)}
		}
		if !slices.ContainsFunc(out, func(f model.PlanFile) bool { return f.FileID == id }) {
			out = append(out, trashed[i])
		}
	}
	return out, nil
}

// insertTrashPlan stores a plan that acts on a delete job's trash (restore
// or purge), one row per file with the decision named like the action, and
// binds it at once to a new delete job.
func insertTrashPlan(ctx context.Context, tx *sqlx.Tx, action protocol.DeleteAction, trashJobID int64, files []model.PlanFile, now string) (model.Job, error) {
	var plan model.Plan
	if err := tx.GetContext(ctx, &plan, `INSERT INTO delete_plans (policy, action, trash_job_id, group_count, remove_count,
			bytes_freed, created_at, expires_at) VALUES ('explicit', ?, ?, 0, ?, 0, ?, ?) RETURNING `+planCols,
		string(action), trashJobID, len(files), now, now); err != nil {
		return model.Job{}, err
	}
	for i, f := range files {
		if _, err := tx.ExecContext(ctx, insertPlanFile, plan.ID, i, i, f.FileID, f.LibraryID, f.RelativePath, string(action),
			f.SizeBytes, f.MtimeNS, string(f.HashAlgorithm), f.ContentHash, f.LibraryPath, nil); err != nil {
			return model.Job{}, err
		}
	}
	job, err := insertPlanJob(ctx, tx, plan.ID, now)
	if err != nil {
		return model.Job{}, err
	}
	return job, claimPlanFiles(ctx, tx, plan.ID, job.ID)
}
