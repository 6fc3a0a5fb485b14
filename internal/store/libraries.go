package store

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

// NewLibrary is the input of CreateLibrary. Path must already be the
// validated real path: the store does no file system checks.
type NewLibrary struct {
	Name                string
	Path                string
	ScanIntervalMinutes int64
	// Media defaults to comics+video.
	Media protocol.LibraryMedia
	// Watch defaults to auto.
	Watch protocol.WatchMode
}

// LibraryPatch changes the named fields; nil fields stay.
type LibraryPatch struct {
	Name                *string
	ScanIntervalMinutes *int64
	AllowDelete         *bool
	AllowUnlink         *bool
	Media               *protocol.LibraryMedia
	Watch               *protocol.WatchMode
}

const libraryCols = sqldb.LibraryCols

// CreateLibrary inserts a library. The same path twice is ErrConflict with
// code library_exists.
func (s *Store) CreateLibrary(ctx context.Context, in NewLibrary) (model.Library, error) {
	now := s.nowText()
	if in.Media == "" {
		in.Media = protocol.LibraryComicsVideo
	}
	if in.Watch == "" {
		in.Watch = protocol.WatchAuto
	}
	var lib model.Library
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &lib, `INSERT INTO libraries (name, path, scan_interval_minutes, media, watch, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+libraryCols, in.Name, in.Path, in.ScanIntervalMinutes, in.Media, in.Watch, now, now)
	})
	if IsUnique(err) {
		return model.Library{}, &protocol.Error{Code: protocol.CodeLibraryExists, Message: "a library with this path exists", Err: ErrConflict}
	}
	if err != nil {
		return model.Library{}, fmt.Errorf("create library: %w", err)
	}
	return lib, nil
}

// GetLibrary returns one library or ErrNotFound.
func (s *Store) GetLibrary(ctx context.Context, id int64) (model.Library, error) {
	return getRow[model.Library](ctx, s.r, libraryRow, `SELECT `+libraryCols+` FROM libraries WHERE id = ?`, id)
}

// ListLibraries returns up to limit libraries with id > afterID, id order.
func (s *Store) ListLibraries(ctx context.Context, afterID int64, limit int) ([]model.Library, error) {
	var out []model.Library
	err := s.r.SelectContext(ctx, &out, `SELECT `+libraryCols+` FROM libraries WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list libraries: %w", err)
	}
	return out, nil
}

// LibraryStats counts a library's files and series and finds its last
// scan session.
func (s *Store) LibraryStats(ctx context.Context, id int64) (model.LibraryStats, error) {
	var st model.LibraryStats
	err := s.r.QueryRowxContext(ctx, `SELECT
			(SELECT count(*) FROM library_files WHERE library_id = ?1),
			(SELECT count(*) FROM library_files WHERE library_id = ?1 AND is_missing = 1),
			(SELECT count(*) FROM series WHERE library_id = ?1),
			(SELECT max(id) FROM scan_sessions WHERE library_id = ?1)`, id).
		Scan(&st.FileCount, &st.MissingCount, &st.SeriesCount, &st.LastScanID)
	if err != nil {
		return st, fmt.Errorf("library stats: %w", err)
	}
	return st, nil
}

// UpdateLibrary applies a patch and returns the new row.
func (s *Store) UpdateLibrary(ctx context.Context, id int64, p LibraryPatch) (model.Library, error) {
	now := s.nowText()
	var lib model.Library
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &lib, `UPDATE libraries SET
				name = coalesce(?, name),
				scan_interval_minutes = coalesce(?, scan_interval_minutes),
				allow_delete = coalesce(?, allow_delete),
				allow_unlink = coalesce(?, allow_unlink),
				media = coalesce(?, media),
				watch = coalesce(?, watch),
				updated_at = ?
			WHERE id = ? RETURNING `+libraryCols, p.Name, p.ScanIntervalMinutes, p.AllowDelete, p.AllowUnlink, p.Media, p.Watch, now, id)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return lib, missingRow(libraryRow, id)
	}
	if err != nil {
		return lib, fmt.Errorf("update library: %w", err)
	}
	return lib, nil
}

// DeleteLibrary removes a library and, through the schema's cascades, its
// files, series, scans and queued requests. It refuses (ErrConflict,
// library_busy) while a scan/hash job that covers the library is pending or
// running. Retryable jobs of the library are cancelled first, so none is
// left pointing at nothing. The covers of the library are not deleted here:
// a cleanup row is scheduled for each thumbnail group of the library, and
// workerd removes the cache files. Media files are never touched.
func (s *Store) DeleteLibrary(ctx context.Context, id int64) error {
	now := s.nowText()
	return s.write(ctx, func(tx *sqlx.Tx) error {
		var active int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs
			WHERE status IN ('pending','running') AND kind IN ('scan','hash')
			  AND (library_id = ? OR (kind = 'hash' AND library_id IS NULL))`, id).Scan(&active)
		if err != nil {
			return fmt.Errorf("delete library: %w", err)
		}
		if active > 0 {
			var exists int
			_ = tx.QueryRowContext(ctx, `SELECT count(*) FROM libraries WHERE id = ?`, id).Scan(&exists)
			if exists == 0 {
				return missingRow(libraryRow, id)
			}
			return &protocol.Error{Code: protocol.CodeLibraryBusy, Message: "a scan or hash job on this library is active", Err: ErrConflict}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'cancelled', error_code = ?, error_message = ?,
				finished_at = ?, updated_at = ? WHERE library_id = ? AND status = 'retryable'`,
			protocol.ErrCancelled, "library deleted", now, now, id); err != nil {
			return fmt.Errorf("delete library: cancel jobs: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO thumbnail_cleanup_jobs (group_key, status, execute_after, created_at, updated_at)
				SELECT g.group_key, 'pending', ?1, ?1, ?1 FROM (SELECT DISTINCT t.group_key FROM thumbnails t
				WHERE t.library_id = ?2 AND NOT EXISTS (SELECT 1 FROM thumbnail_cleanup_jobs c
					WHERE c.group_key = t.group_key AND c.status = 'pending')) AS g`, now, id); err != nil {
			return fmt.Errorf("delete library: schedule cleanup: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM libraries WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("delete library: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return missingRow(libraryRow, id)
		}
		return nil
	})
}

// LibraryPath returns the path a library was registered with, for the data
// plane (scan, hash) that walks it. ErrNotFound when the library is gone.
// The caller resolves and confines the path; the store does no file system
// checks.
func (s *Store) LibraryPath(ctx context.Context, id int64) (string, error) {
	var path string
	err := s.r.QueryRowContext(ctx, `SELECT path FROM libraries WHERE id = ?`, id).Scan(&path)
	if errors.Is(err, sql.ErrNoRows) {
		return "", missingRow(libraryRow, id)
	}
	if err != nil {
		return "", fmt.Errorf("library path: %w", err)
	}
	return path, nil
}
