package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bindery-nas/bindery/internal/natsort"
)

// addSortKeys is migration 9: series and books get the keys of their
// natural order (natsort.SeriesKey, natsort.BookKey), with the indexes
// that page by them, and every existing row gets its key here, so that no
// rescan is needed. Writers keep them current from then on (the store).
func addSortKeys(ctx context.Context, tx *sql.Tx) error {
	for _, stmt := range []string{
		`ALTER TABLE series ADD COLUMN sort_key TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE library_files ADD COLUMN sort_key TEXT NOT NULL DEFAULT ''`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sort keys: %w", err)
		}
	}
	if err := backfill(ctx, tx, `SELECT id, name FROM series`, `UPDATE series SET sort_key = ? WHERE id = ?`,
		func(rows *sql.Rows) (int64, string, error) {
			var id int64
			var name string
			err := rows.Scan(&id, &name)
			return id, natsort.SeriesKey(name), err
		}); err != nil {
		return err
	}
	if err := backfill(ctx, tx, `SELECT f.id, f.relative_path, m.number, m.volume FROM library_files f
			LEFT JOIN file_metadata m ON m.file_id = f.id`, `UPDATE library_files SET sort_key = ? WHERE id = ?`,
		func(rows *sql.Rows) (int64, string, error) {
			var id int64
			var rel string
			var number sql.NullString
			var volume sql.NullInt64
			err := rows.Scan(&id, &rel, &number, &volume)
			return id, natsort.BookKey(number.String, volume.Int64, volume.Valid, rel), err
		}); err != nil {
		return err
	}
	for _, stmt := range []string{
		`CREATE INDEX ix_series_sort ON series (library_id, sort_key, id)`,
		`CREATE INDEX ix_series_sort_all ON series (sort_key, id)`,
		`CREATE INDEX ix_library_files_series_sort ON library_files (series_id, sort_key, id)`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sort keys: %w", err)
		}
	}
	return nil
}

// backfill computes a key for every row of query and writes it with update.
// The rows are read whole first: SQLite does not allow an UPDATE of the
// table a statement of the same connection is still reading, and a million
// (id, key) pairs are a few tens of MB.
func backfill(ctx context.Context, tx *sql.Tx, query, update string, key func(*sql.Rows) (int64, string, error)) error {
	type pair struct {
		id  int64
		key string
	}
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("sort keys: %w", err)
	}
	var todo []pair
	for rows.Next() {
		id, k, err := key(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("sort keys: %w", err)
		}
		todo = append(todo, pair{id, k})
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("sort keys: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, update)
	if err != nil {
		return fmt.Errorf("sort keys: %w", err)
	}
	defer stmt.Close()
	for _, p := range todo {
		if _, err := stmt.ExecContext(ctx, p.key, p.id); err != nil {
			return fmt.Errorf("sort keys: %w", err)
		}
	}
	return nil
}
