package migrations

import (
	"context"
	"database/sql"
	"slices"
	"testing"
)

// TestSearchBackfillAndDown: migration 26 indexes the rows written before
// it (a book by path, series, title and writer; a series by name), and its
// Down removes the index, its view and triggers so 25 writes as before.
func TestSearchBackfillAndDown(t *testing.T) {
	ctx := context.Background()
	db, p := migratedTo(t, 25)
	mustExec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		`INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'l', '/l', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO series (id, library_id, name, name_key, created_at, updated_at) VALUES (1, 1, 'The Boys', 'the boys', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, series_id, created_at, updated_at)
			VALUES (1, 1, 'b/Boys 12.cbz', 1, 1, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000'), (2, 1, 'c/Crossed 1.cbz', 1, 1, NULL, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO file_metadata (file_id, source, title, writer, updated_at) VALUES (1, 'comicinfo', 'Herogasm', 'Garth Ennis', '2026-01-01 00:00:00.000'),
			(2, 'comicinfo', NULL, 'Garth Ennis', '2026-01-01 00:00:00.000')`,
	} {
		mustExec(q)
	}
	if _, err := p.UpTo(ctx, 26); err != nil {
		t.Fatal(err)
	}
	for match, want := range map[string][]int64{
		`"ennis"`: {1, 2}, `"boys" "herogasm"`: {1}, `"crossed" "garth"`: {2}, `"12"`: {1},
	} {
		if got := docids(t, db, `SELECT docid FROM book_search WHERE book_search MATCH ? ORDER BY docid`, match); !slices.Equal(got, want) {
			t.Errorf("book_search MATCH %s = %v; want %v", match, got, want)
		}
	}
	if got := docids(t, db, `SELECT docid FROM series_search WHERE series_search MATCH ?`, `"boys"`); !slices.Equal(got, []int64{1}) {
		t.Errorf("series_search boys = %v", got)
	}
	if _, err := p.DownTo(ctx, 25); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name LIKE '%search%'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after Down: %d search objects left, %v", left, err)
	}
	mustExec(`UPDATE series SET name = 'Boys' WHERE id = 1`)
	mustExec(`DELETE FROM library_files WHERE id = 2`)
}

func docids(t *testing.T, db *sql.DB, q, arg string) []int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, arg)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	ids := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
