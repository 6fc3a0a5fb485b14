package thumbnails

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// ThumbnailMetrics are the figures of GET /thumbnails/metrics.
type ThumbnailMetrics struct {
	// Pending and Running count the queue's work: renders and the cover
	// hashes of covers rendered before migration 29 (task 'hash').
	Pending int64
	Running int64
	// Ready and Failed count covers: render rows only, so that a cover
	// hashed after an upgrade is not counted twice.
	Ready  int64
	Failed int64
	// RetryBacklog: failed render rows whose retry_after has passed (the
	// next requeue pass will make them pending again).
	RetryBacklog   int64
	CleanupPending int64
	CleanupRunning int64
	// CleanupOverdue: pending cleanup rows whose execute_after has passed.
	CleanupOverdue int64
	// MaxCleanupLagSeconds: how long the oldest overdue cleanup row has
	// been waiting past its execute_after; 0 when none is overdue.
	MaxCleanupLagSeconds float64
	// Crashed lists the newest covers that failed with render_crashed
	// (workerd died rendering them MaxRecoveries times), at most 20.
	Crashed []CrashedCover
}

// CrashedCover is a cover whose render kept killing workerd.
type CrashedCover struct {
	ThumbnailID  int64         `db:"id"`
	FileID       int64         `db:"file_id"`
	RelativePath string        `db:"relative_path"`
	FinishedAt   protocol.Time `db:"finished_at"`
}

// GetThumbnail returns one thumbnail row or sqldb.ErrNotFound.
func (s *Store) GetThumbnail(ctx context.Context, id int64) (model.Thumbnail, error) {
	return sqldb.GetRow[model.Thumbnail](ctx, s.db.R, sqldb.ThumbnailRow, `SELECT `+sqldb.ThumbnailCols+` FROM thumbnails WHERE id = ?`, id)
}

// ThumbnailMetrics counts thumbnail and cleanup rows by state. Each count
// is served by an index whose first column is status.
func (s *Store) ThumbnailMetrics(ctx context.Context) (ThumbnailMetrics, error) {
	now := s.db.NowText()
	var m ThumbnailMetrics
	var oldest sql.NullString
	err := s.db.R.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM thumbnails WHERE status = 'pending'),
			(SELECT count(*) FROM thumbnails WHERE status = 'running'),
			(SELECT count(*) FROM thumbnails WHERE status = 'ready' AND task = 'render'),
			(SELECT count(*) FROM thumbnails WHERE status = 'failed' AND task = 'render'),
			(SELECT count(*) FROM thumbnails WHERE status = 'failed' AND task = 'render' AND retry_after IS NOT NULL AND retry_after <= ?1),
			(SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status = 'pending'),
			(SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status = 'running'),
			(SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status = 'pending' AND execute_after <= ?1),
			(SELECT min(execute_after) FROM thumbnail_cleanup_jobs WHERE status = 'pending' AND execute_after <= ?1)`,
		now).Scan(&m.Pending, &m.Running, &m.Ready, &m.Failed, &m.RetryBacklog,
		&m.CleanupPending, &m.CleanupRunning, &m.CleanupOverdue, &oldest)
	if err != nil {
		return m, fmt.Errorf("thumbnail metrics: %w", err)
	}
	if oldest.Valid {
		if t, err := protocol.ParseTime(oldest.String); err == nil {
			m.MaxCleanupLagSeconds = s.db.Now().Sub(t).Seconds()
		}
	}
	m.Crashed = []CrashedCover{}
	err = s.db.R.SelectContext(ctx, &m.Crashed, `SELECT t.id, t.file_id, coalesce(f.relative_path, '') AS relative_path,
			coalesce(t.finished_at, t.updated_at) AS finished_at
		FROM thumbnails t LEFT JOIN library_files f ON f.id = t.file_id
		WHERE t.status = 'failed' AND t.error_code = ? ORDER BY t.id DESC LIMIT 20`, protocol.ErrRenderCrashed)
	if err != nil {
		return m, fmt.Errorf("thumbnail metrics: %w", err)
	}
	return m, nil
}
