package storetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// The raw SQL of tests, and of tools acting as a third party that writes
// rows by hand. It runs on st's own pools (for a worker store, under its
// whitelist), so a test sees exactly what the product's connections see;
// product code uses the store's named methods.

// Exec runs one statement on st's writer pool.
func Exec(ctx context.Context, st *store.Store, query string, args ...any) (sql.Result, error) {
	w := sqldb.Of(st).W
	return w.ExecContext(ctx, query, args...)
}

// InsertID runs one `INSERT … RETURNING id` on st's writer pool and
// returns the new row's id (database/sql's LastInsertId has no PostgreSQL
// form).
func InsertID(ctx context.Context, st *store.Store, query string, args ...any) (int64, error) {
	w := sqldb.Of(st).W
	var id int64
	err := w.QueryRowContext(ctx, query, args...).Scan(&id)
	return id, err
}

// QueryInt runs a query returning one integer on st's reader pool.
func QueryInt(ctx context.Context, st *store.Store, query string, args ...any) (int64, error) {
	var n int64
	err := QueryRow(ctx, st, query, args...).Scan(&n)
	return n, err
}

// QueryText runs a query returning one text value on st's reader pool.
func QueryText(ctx context.Context, st *store.Store, query string, args ...any) (string, error) {
	var v string
	err := QueryRow(ctx, st, query, args...).Scan(&v)
	return v, err
}

// QueryRow runs a query returning one row on st's reader pool.
func QueryRow(ctx context.Context, st *store.Store, query string, args ...any) *sql.Row {
	r := sqldb.Of(st).R
	return r.QueryRowContext(ctx, query, args...)
}

// QueryRows runs a query on st's reader pool.
func QueryRows(ctx context.Context, st *store.Store, query string, args ...any) (*sql.Rows, error) {
	r := sqldb.Of(st).R
	return r.QueryContext(ctx, query, args...)
}

// QueryInts runs a query returning one integer column on st's reader
// pool.
func QueryInts(ctx context.Context, st *store.Store, query string, args ...any) ([]int64, error) {
	rows, err := QueryRows(ctx, st, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// AnalyzeSQL refreshes the planner's statistics after a bulk load, as the
// engine under test spells it.
func AnalyzeSQL() string {
	if Postgres() {
		return `VACUUM ANALYZE`
	}
	return `ANALYZE`
}

// MustExec is Exec that fails the test on an error.
func MustExec(tb testing.TB, st *store.Store, query string, args ...any) {
	tb.Helper()
	if _, err := Exec(context.Background(), st, query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}
