package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Change detection for controld's event feed. workerd runs in another
// process, so controld cannot be told of progress: it polls. Polling stays
// cheap because PRAGMA data_version, read on one dedicated connection,
// changes only when another connection committed; only then are the rows
// updated since the last look read, through indexes on updated_at.

// ChangeWatcher holds the dedicated connection whose data_version is read.
type ChangeWatcher struct {
	conn *sql.Conn
	last int64
}

// WatchChanges takes a reader connection out of the pool for a watcher.
// Close returns it.
func (s *Store) WatchChanges(ctx context.Context) (*ChangeWatcher, error) {
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch changes: %w", err)
	}
	w := &ChangeWatcher{conn: conn}
	if w.last, err = w.version(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return w, nil
}

func (w *ChangeWatcher) version(ctx context.Context) (int64, error) {
	var v int64
	if err := w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("data version: %w", err)
	}
	return v, nil
}

// Changed reports whether any other connection committed since the last
// call (or since WatchChanges).
func (w *ChangeWatcher) Changed(ctx context.Context) (bool, error) {
	v, err := w.version(ctx)
	if err != nil {
		return false, err
	}
	changed := v != w.last
	w.last = v
	return changed, nil
}

// Close gives the connection back to the pool.
func (w *ChangeWatcher) Close() error { return w.conn.Close() }

// JobsUpdatedSince returns up to limit jobs whose updated_at >= since,
// oldest change first.
func (s *Store) JobsUpdatedSince(ctx context.Context, since string, limit int) ([]Job, error) {
	var out []Job
	err := s.r.SelectContext(ctx, &out, `SELECT `+jobCols+` FROM jobs
		WHERE updated_at >= ? ORDER BY updated_at, id LIMIT ?`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("jobs updated since: %w", err)
	}
	return out, nil
}

// ThumbnailsSettledSince returns up to limit thumbnail rows that became
// ready or failed with updated_at >= since, oldest change first.
func (s *Store) ThumbnailsSettledSince(ctx context.Context, since string, limit int) ([]Thumbnail, error) {
	var out []Thumbnail
	err := s.r.SelectContext(ctx, &out, `SELECT `+thumbnailCols+` FROM thumbnails
		WHERE updated_at >= ? AND status IN ('ready','failed') ORDER BY updated_at, id LIMIT ?`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("thumbnails settled since: %w", err)
	}
	return out, nil
}

// ScanErrorsAfter returns up to limit scan errors with id > afterID, with
// the library of their session.
func (s *Store) ScanErrorsAfter(ctx context.Context, afterID int64, limit int) ([]ScanErrorEvent, error) {
	var out []ScanErrorEvent
	err := s.r.SelectContext(ctx, &out, `SELECT e.id, e.session_id, e.relative_path, e.error_code, e.message,
			s.library_id, s.job_id
		FROM scan_errors e JOIN scan_sessions s ON s.id = e.session_id
		WHERE e.id > ? ORDER BY e.id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("scan errors after: %w", err)
	}
	return out, nil
}

// ScanErrorEvent is a scan error with its session's library and job.
type ScanErrorEvent struct {
	ID           int64         `db:"id"`
	SessionID    int64         `db:"session_id"`
	RelativePath string        `db:"relative_path"`
	ErrorCode    string        `db:"error_code"`
	Message      string        `db:"message"`
	LibraryID    int64         `db:"library_id"`
	JobID        sql.NullInt64 `db:"job_id"`
}

// LastScanErrorID is the newest scan error id, 0 when there is none; the
// event feed starts after it.
func (s *Store) LastScanErrorID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT max(id) FROM scan_errors`).Scan(&id); err != nil {
		return 0, fmt.Errorf("last scan error: %w", err)
	}
	return id.Int64, nil
}
