package scanning

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
	"github.com/jmoiron/sqlx"
)

// AbandonedScanMessage is written on sessions that were still running when a
// new scan of their library started (their worker died).
const AbandonedScanMessage = "scan session abandoned: a newer scan of the library started"

// StartScanSession opens a running session for a scan job. Sessions of the
// same library still marked running belong to a scan that was killed (scans
// are single-active): they are closed as failed first, so that a library
// never shows two running sessions.
func (s *Store) StartScanSession(ctx context.Context, f model.Fence, libraryID int64) (model.Scan, error) {
	now := s.db.NowText()
	var rec model.Scan
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE scan_sessions SET status = 'failed', error_code = ?, error_message = ?,
				finished_at = ? WHERE library_id = ? AND status = 'running'`,
			protocol.ErrLeaseExpired, AbandonedScanMessage, now, libraryID); err != nil {
			return err
		}
		return tx.GetContext(ctx, &rec, `INSERT INTO scan_sessions (job_id, library_id, status, started_at)
			VALUES (?, ?, 'running', ?) RETURNING `+sqldb.ScanCols, f.ID, libraryID, now)
	})
	if err != nil {
		return rec, fmt.Errorf("start scan session: %w", err)
	}
	return rec, nil
}

// UpdateScanCounts writes a running session's figures.
func (s *Store) UpdateScanCounts(ctx context.Context, f model.Fence, id int64, c model.ScanCounts) error {
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error { return writeScanCounts(ctx, tx, id, c) })
	if err != nil {
		return fmt.Errorf("update scan counts: %w", err)
	}
	return nil
}

// writeScanCounts writes the figures of a session that is still running;
// sqldb.ErrNotOwner when it was closed meanwhile (abandoned by a newer scan).
func writeScanCounts(ctx context.Context, tx *sqlx.Tx, id int64, c model.ScanCounts) error {
	return sqldb.OwnedExec(ctx, tx, `UPDATE scan_sessions SET files_seen = ?, directories_seen = ?, bytes_seen = ?,
			added = ?, changed = ?, unchanged = ?, missing = ?, restored = ?, moved = ?, series_created = ?, purged = ?,
			error_count = ?
		WHERE id = ? AND status = 'running'`, c.FilesSeen, c.DirectoriesSeen, c.BytesSeen, c.Added, c.Changed, c.Unchanged, c.Missing,
		c.Restored, c.Moved, c.SeriesCreated, c.Purged, c.ErrorCount, id)
}

// FinishScanSession closes a running session with succeeded or failed
// (with an error code) and its final figures; sqldb.ErrNotOwner when the session
// was closed already.
func (s *Store) FinishScanSession(ctx context.Context, f model.Fence, id int64, status protocol.ScanSessionStatus, c model.ScanCounts, code, msg string) error {
	now := s.db.NowText()
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		// A session already closed (abandoned when a newer scan of the
		// library started) keeps its ending: a leftover run cannot flip it.
		if err := writeScanCounts(ctx, tx, id, c); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE scan_sessions SET status = ?, error_code = nullif(?, ''),
				error_message = nullif(?, ''), finished_at = ? WHERE id = ? AND status = 'running'`, status, code, msg, now, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish scan session: %w", err)
	}
	return nil
}

// AddScanErrors records errors of a session on their own (errors found
// outside a batch of file writes, such as an unreadable folder).
func (s *Store) AddScanErrors(ctx context.Context, f model.Fence, sessionID int64, errs []model.ScanError) error {
	if len(errs) == 0 {
		return nil
	}
	now := s.db.NowText()
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error { return insertScanErrors(ctx, tx, sessionID, errs, now) })
	if err != nil {
		return fmt.Errorf("add scan errors: %w", err)
	}
	return nil
}

func insertScanErrors(ctx context.Context, tx *sqlx.Tx, sessionID int64, errs []model.ScanError, now string) error {
	if len(errs) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO scan_errors (session_id, relative_path, error_code, message, created_at)
		VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, e := range errs {
		if _, err := stmt.ExecContext(ctx, sessionID, e.RelativePath, e.ErrorCode, e.Message, now); err != nil {
			return fmt.Errorf("scan error %s: %w", e.RelativePath, err)
		}
	}
	return nil
}
