package migrations

import (
	"context"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/internal/natsort"
)

// TestSortKeysBackfill: a database at version 8 with series and books gets
// their natural-order keys from migration 9, metadata included.
func TestSortKeysBackfill(t *testing.T) {
	ctx := context.Background()
	db, p := migratedTo(t, 8)
	for _, q := range []string{
		`INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'l', '/l', 'x', 'x')`,
		`INSERT INTO series (id, library_id, name, name_key, created_at, updated_at) VALUES (1, 1, 'The Boys', 'the boys', 'x', 'x')`,
		`INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, series_id, created_at, updated_at)
			VALUES (1, 1, 'b/Boys 12.cbz', 1, 1, 1, 'x', 'x'), (2, 1, 'b/Boys 2.cbz', 1, 1, 1, 'x', 'x')`,
		`INSERT INTO file_metadata (file_id, source, number, volume, updated_at) VALUES (1, 'comicinfo', '12.5', 3, 'x')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var series, book1, book2 string
	if err := db.QueryRowContext(ctx, `SELECT (SELECT sort_key FROM series WHERE id = 1),
		(SELECT sort_key FROM library_files WHERE id = 1), (SELECT sort_key FROM library_files WHERE id = 2)`).
		Scan(&series, &book1, &book2); err != nil {
		t.Fatal(err)
	}
	if series != natsort.SeriesKey("The Boys") || book1 != natsort.BookKey("12.5", 3, true, "b/Boys 12.cbz") ||
		book2 != natsort.BookKey("", 0, false, "b/Boys 2.cbz") {
		t.Fatalf("keys %q %q %q", series, book1, book2)
	}
}
