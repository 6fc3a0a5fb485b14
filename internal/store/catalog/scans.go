package catalog

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// GetScan returns one session or sqldb.ErrNotFound.
func (s *Store) GetScan(ctx context.Context, id int64) (model.Scan, error) {
	return sqldb.GetRow[model.Scan](ctx, s.db.R, sqldb.ScanRow, `SELECT `+sqldb.ScanCols+` FROM scan_sessions WHERE id = ?`, id)
}

// ListScans returns up to limit sessions, newest first, of one library (or
// of all when libraryID is not valid), starting below beforeID (0 = from the
// newest).
func (s *Store) ListScans(ctx context.Context, libraryID *int64, beforeID int64, limit int) ([]model.Scan, error) {
	var out []model.Scan
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+sqldb.ScanCols+` FROM scan_sessions
		WHERE (library_id = ?1 OR ?1 IS NULL) AND (?2 = 0 OR id < ?2)
		ORDER BY id DESC LIMIT ?3`, libraryID, beforeID, limit)
	if err != nil {
		return nil, fmt.Errorf("list scans: %w", err)
	}
	return out, nil
}

// ScanErrors returns up to limit errors of a session with id > afterID, in
// id order, with their ids.
func (s *Store) ScanErrors(ctx context.Context, sessionID, afterID int64, limit int) ([]model.ScanErrorEntry, error) {
	var out []model.ScanErrorEntry
	err := s.db.R.SelectContext(ctx, &out, `SELECT id, session_id, relative_path, error_code, message, created_at
		FROM scan_errors WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?`, sessionID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("scan errors: %w", err)
	}
	return out, nil
}
