package duplicates

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// SettleKeeperProgress moves reading progress off the copies a delete job
// removed (trashed or unlinked) to the copy its plan kept in the same
// group, for each user whose keeper has no progress yet; the removed
// copy's progress is deleted either way, so a pass never repeats. workerd
// records the outcomes and cannot write reading_progress: controld's
// scheduler runs this after them. It returns how many rows it moved.
func (s *Store) SettleKeeperProgress(ctx context.Context) (int64, error) {
	const removed = `FROM reading_progress p
		JOIN delete_outcomes o ON o.file_id = p.file_id AND o.outcome IN ('trashed', 'unlinked')
		JOIN delete_plans pl ON pl.job_id = o.job_id
		JOIN delete_plan_files r ON r.plan_id = pl.id AND r.file_id = o.file_id AND r.decision = 'remove'
		JOIN delete_plan_files k ON k.plan_id = pl.id AND k.group_seq = r.group_seq AND k.decision = 'keep'`
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO reading_progress (user_id, file_id, page, completed, updated_at)
			SELECT p.user_id, k.file_id, max(p.page), max(p.completed), max(p.updated_at) `+removed+`
			GROUP BY p.user_id, k.file_id ON CONFLICT (user_id, file_id) DO NOTHING`)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, `DELETE FROM reading_progress WHERE (user_id, file_id) IN (
			SELECT p.user_id, p.file_id `+removed+`)`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("settle keeper progress: %w", err)
	}
	return n, nil
}
