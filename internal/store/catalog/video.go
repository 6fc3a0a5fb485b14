package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// VideoProbeOf returns the probe of a file; sqldb.ErrNotFound when there is none.
func (s *Store) VideoProbeOf(ctx context.Context, fileID int64) (model.VideoProbe, error) {
	var p model.VideoProbe
	err := s.db.R.GetContext(ctx, &p, `SELECT `+sqldb.VideoProbeCols+` FROM video_probes WHERE file_id = ?`, fileID)
	if errors.Is(err, sql.ErrNoRows) {
		return p, sqldb.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("video probe of file %d: %w", fileID, err)
	}
	return p, nil
}
