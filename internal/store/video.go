package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

const videoProbeCols = sqldb.VideoProbeCols

// VideoProbeOf returns the probe of a file; ErrNotFound when there is none.
func (s *Store) VideoProbeOf(ctx context.Context, fileID int64) (model.VideoProbe, error) {
	var p model.VideoProbe
	err := s.r.GetContext(ctx, &p, `SELECT `+videoProbeCols+` FROM video_probes WHERE file_id = ?`, fileID)
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("video probe of file %d: %w", fileID, err)
	}
	return p, nil
}
