package store

import (
	"context"
	"fmt"
)

// CheckIntegrity reads the database at path as a monitoring tool would and
// reports whether the engine finds it intact, with what it found. SQLite:
// PRAGMA integrity_check (pages, indexes) and foreign_key_check.
// PostgreSQL checks pages and keys on every write; what a crash can leave
// is an index a CREATE INDEX CONCURRENTLY did not finish, so it counts
// invalid indexes.
func CheckIntegrity(ctx context.Context, path string) (ok bool, report string, err error) {
	db, err := OpenReadOnly(path)
	if err != nil {
		return false, "", err
	}
	defer db.Close()
	if dialectOf(path) == dialectPostgres {
		var invalid int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND NOT (i.indisvalid AND i.indisready)`).Scan(&invalid); err != nil {
			return false, "", fmt.Errorf("integrity: %w", err)
		}
		return invalid == 0, fmt.Sprintf("PostgreSQL: %d invalid indexes", invalid), nil
	}
	var res string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil {
		return false, "", fmt.Errorf("integrity: %w", err)
	}
	rows, err := db.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return false, "", fmt.Errorf("integrity: %w", err)
	}
	defer rows.Close()
	fk := 0
	for rows.Next() {
		fk++
	}
	if err := rows.Err(); err != nil {
		return false, "", fmt.Errorf("integrity: %w", err)
	}
	return res == "ok" && fk == 0, fmt.Sprintf("integrity_check: %s; foreign_key_check: %d violations", res, fk), nil
}
