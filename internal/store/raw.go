package store

import (
	"context"
	"database/sql"
	"net/url"
)

// Exec runs one statement on the writer pool. It exists for tests and for
// tools that act as a third party writing rows by hand; product code uses
// the named methods of this package.
func (s *Store) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.w.ExecContext(ctx, query, args...)
}

// QueryInt runs a query returning one integer on the reader pool; for tests.
func (s *Store) QueryInt(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}

// QueryText runs a query returning one text value on the reader pool; for
// tests.
func (s *Store) QueryText(ctx context.Context, query string, args ...any) (string, error) {
	var v string
	err := s.r.QueryRowContext(ctx, query, args...).Scan(&v)
	return v, err
}

// InsertID runs one `INSERT … RETURNING id` on the writer pool and returns
// the new row's id (database/sql's LastInsertId has no PostgreSQL form).
// For tests and third-party writers, like Exec.
func (s *Store) InsertID(ctx context.Context, query string, args ...any) (int64, error) {
	var id int64
	err := s.w.QueryRowContext(ctx, query, args...).Scan(&id)
	return id, err
}

// OpenRaw opens the database as a third party holds it: one plain
// database/sql handle, no whitelist and none of the store's pools, with the
// store's `?` placeholders on either engine. For tests and tools.
func OpenRaw(path string) (*sql.DB, error) { return openRaw(path, false) }

// OpenReadOnly is OpenRaw for a monitoring tool: SQLite opened with
// mode=ro, PostgreSQL with read-only transactions.
func OpenReadOnly(path string) (*sql.DB, error) { return openRaw(path, true) }

func openRaw(path string, readOnly bool) (*sql.DB, error) {
	if engineOf(path) == enginePostgres {
		registerPostgres()
		u, err := pgURL(path, readOnly)
		if err != nil {
			return nil, err
		}
		return sql.Open(driverPostgres, u)
	}
	registerDrivers()
	mode := ""
	if readOnly {
		mode = "mode=ro&"
	}
	return sql.Open(driverControl, "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+mode+"_busy_timeout=10000")
}

// QueryRow runs a query returning one row on the reader pool; for tests.
func (s *Store) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return s.r.QueryRowContext(ctx, query, args...)
}
