package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bindery-nas/bindery/protocol"
)

// LibraryPath returns the path a library was registered with, for the data
// plane (scan, hash) that walks it. ErrNotFound when the library is gone.
// The caller resolves and confines the path; the store does no file system
// checks.
func (s *Store) LibraryPath(ctx context.Context, id int64) (string, error) {
	var path string
	err := s.r.QueryRowContext(ctx, `SELECT path FROM libraries WHERE id = ?`, id).Scan(&path)
	if errors.Is(err, sql.ErrNoRows) {
		return "", dataNotFound("library", id)
	}
	if err != nil {
		return "", fmt.Errorf("library path: %w", err)
	}
	return path, nil
}

// dataNotFound is ErrNotFound with a code naming what was missing
// ("library_not_found", "scan_not_found", ...), for the data-plane readers.
func dataNotFound(what string, id any) error {
	return &protocol.Error{Code: what + "_not_found", Message: fmt.Sprintf("%s %v not found", what, id), Err: ErrNotFound}
}
