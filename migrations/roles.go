package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/bindery-nas/bindery/internal/natsort"
)

// addFileRoles is migration 14 (issue 19, item 2): a folder of page images
// becomes one book, and cover art beside archives stops being a book.
// library_files gets format 'folder' and a role column:
//
//   - book: a file that is a book (an archive or a loose image), every row
//     before this migration;
//   - folder: a folder of page images read as one book (its relative_path
//     ends in '/'); never hashed, it is the sum of its pages;
//   - page: an image inside such a folder, hashed and grouped on its own,
//     never a book;
//   - sidecar: cover.jpg, folder.png, poster.webp or series.jpg beside
//     archives, the series' cover art.
//
// SQLite cannot change a CHECK in place, so the table is rebuilt the way
// SQLite documents (create, copy, drop, rename, then the indexes and
// triggers again), ids kept. Existing rows stay books: the next ordinary
// scan sees the folders on disk and gives pages and sidecars their role,
// keeping each row's id, hash and cover; nothing is rescanned from scratch.
func addFileRoles(ctx context.Context, tx *sql.Tx) error {
	// role goes right after the signature columns, which discovery reads
	// for every row of every rescan: SQLite decodes a record's columns up
	// to the last one asked for, and a column added at the end would cost
	// every rescan the whole row (measured: +25% on an unchanged 10,000).
	edits := []struct{ before, after string }{
		{`CHECK (format IN ('zip','rar','7z','image'))`, `CHECK (format IN ('zip','rar','7z','image','folder'))`},
		{"mtime_ns               INTEGER NOT NULL,", "mtime_ns               INTEGER NOT NULL,\n" +
			"    role                   TEXT    NOT NULL DEFAULT 'book' CHECK (role IN ('book','folder','page','sidecar')),"},
	}
	err := rebuildTable(ctx, tx, "library_files", func(create string) (string, error) {
		for _, e := range edits {
			if !strings.Contains(create, e.before) {
				return "", fmt.Errorf("library_files has no %s", e.before)
			}
			create = strings.Replace(create, e.before, e.after, 1)
		}
		return create, nil
	})
	if err != nil {
		return fmt.Errorf("file roles: %w", err)
	}
	for _, stmt := range []string{
		`CREATE INDEX ix_library_files_sidecars ON library_files (library_id, relative_path) WHERE role = 'sidecar'`,
		`ALTER TABLE library_files ADD COLUMN path_key TEXT NOT NULL DEFAULT ''`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("file roles: %w", err)
		}
	}
	return addPathKeys(ctx, tx)
}

// addPathKeys fills library_files.path_key, the natural order of
// GET /files (natsort.Key of the relative path: "Batman 2" before
// "Batman 10"), and indexes it per library, the order that list pages by.
func addPathKeys(ctx context.Context, tx *sql.Tx) error {
	err := backfill(ctx, tx, `SELECT id, relative_path FROM library_files`, `UPDATE library_files SET path_key = ? WHERE id = ?`,
		func(rows *sql.Rows) (int64, string, error) {
			var id int64
			var rel string
			err := rows.Scan(&id, &rel)
			return id, natsort.Key(rel), err
		})
	if err != nil {
		return fmt.Errorf("path keys: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE INDEX ix_library_files_path_order ON library_files (library_id, path_key, id)`); err != nil {
		return fmt.Errorf("path keys: %w", err)
	}
	return nil
}

// rebuildTable replaces table by one created from edit(its CREATE
// statement), with the same rows, indexes and triggers. The caller's
// connection must have foreign keys off (Up's contract): dropping the old
// table would otherwise cascade.
func rebuildTable(ctx context.Context, tx *sql.Tx, table string, edit func(string) (string, error)) error {
	var create string
	err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&create)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", table, err)
	}
	deps, err := queryStrings(ctx, tx, `SELECT sql FROM sqlite_master
		WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name`, table)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", table, err)
	}
	cols, err := columnList(ctx, tx, table)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", table, err)
	}
	edited, err := edit(create)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", table, err)
	}
	// A table SQLite renamed once is stored as CREATE TABLE "name".
	var body string
	for _, head := range []string{"CREATE TABLE " + table, `CREATE TABLE "` + table + `"`} {
		if rest, ok := strings.CutPrefix(edited, head); ok {
			body = rest
		}
	}
	if body == "" {
		return fmt.Errorf("rebuild %s: unexpected statement %.40q", table, edited)
	}
	tmp := table + "_rebuild"
	list := strings.Join(cols, ", ")
	stmts := []string{
		"CREATE TABLE " + tmp + body,
		"INSERT INTO " + tmp + " (" + list + ") SELECT " + list + " FROM " + table,
		"DROP TABLE " + table,
		"ALTER TABLE " + tmp + " RENAME TO " + table,
	}
	for _, stmt := range append(stmts, deps...) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("rebuild %s: %w", table, err)
		}
	}
	return nil
}
