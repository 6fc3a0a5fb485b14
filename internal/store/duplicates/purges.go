package duplicates

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// purgeDue selects the delete jobs whose trash is due for a purge: ended
// before ?1, that trashed something, and not purged yet.
const purgeDue = `SELECT p.job_id AS job_id, p.id AS plan_id FROM delete_plans p JOIN jobs j ON j.id = p.job_id
	WHERE p.action = 'trash' AND j.status IN ('completed', 'failed', 'cancelled') AND j.finished_at < ?1
	  AND (EXISTS (SELECT 1 FROM delete_outcomes o WHERE o.job_id = p.job_id AND o.outcome = 'trashed')
		OR EXISTS (SELECT 1 FROM delete_intents i WHERE i.job_id = p.job_id))
	  AND NOT EXISTS (SELECT 1 FROM delete_plans q WHERE q.trash_job_id = p.job_id AND q.action = 'purge')
	ORDER BY p.job_id LIMIT ?2`

// SchedulePurges authorizes, for each delete job that ended before before,
// one purge of what is still in its trash (a restore may have taken some
// back): a plan bound to a new delete job, once per trashed job. It returns
// how many it scheduled, at most limit.
func (s *Store) SchedulePurges(ctx context.Context, before time.Time, limit int) (int64, error) {
	now := protocol.FormatTime(s.db.Now())
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		var due []struct {
			JobID  int64 `db:"job_id"`
			PlanID int64 `db:"plan_id"`
		}
		if err := tx.SelectContext(ctx, &due, purgeDue, protocol.FormatTime(before), limit); err != nil {
			return err
		}
		for _, d := range due {
			var files []model.PlanFile
			if err := tx.SelectContext(ctx, &files, inTrashQuery, d.JobID, d.PlanID); err != nil {
				return err
			}
			// A restore of this trash still running holds its files: the
			// purge waits for a later tick.
			if busy, err := filesBusy(ctx, tx, files); err != nil || busy {
				if err != nil {
					return err
				}
				continue
			}
			if _, err := insertTrashPlan(ctx, tx, protocol.ActionPurge, d.JobID, files, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("schedule purges: %w", err)
	}
	return n, nil
}
