package reading_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

const benchBooks = 100_000

// likeSearch is what a search without the index runs: the pre-migration-26
// OPDS search (title, path, series name) widened to the writer, the first
// page of 50 in id order.
const likeSearch = `SELECT f.id, f.relative_path, m.title, s.name FROM library_files f
	LEFT JOIN series s ON s.id = f.series_id LEFT JOIN file_metadata m ON m.file_id = f.id
	WHERE f.is_missing = 0 AND f.role IN ('book', 'folder') AND (lower(coalesce(m.title, '')) LIKE $1
	OR lower(f.relative_path) LIKE $1 OR lower(coalesce(s.name, '')) LIKE $1 OR lower(coalesce(m.writer, '')) LIKE $1)
	ORDER BY f.id LIMIT 50`

// BenchmarkSearch compares the index with LIKE '%term%' over 100,000 books
// in 2,000 series with 500 writers: "author42" matches every 500th book
// (LIKE also matches author420–429), "zanzibar" one book, the last.
func BenchmarkSearch(b *testing.B) {
	control, _, path := storetest.MustOpenDB(b)
	ctx := context.Background()
	lib := testfactory.Library(b, control, nil)
	seedBooks(b, control, lib)
	raw, err := store.OpenRaw(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	for _, term := range []string{"author42", "zanzibar"} {
		q, err := reading.ParseSearch(term)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("index/"+term, func(b *testing.B) {
			for b.Loop() {
				if rows, err := reading.New(control).SearchBooks(ctx, reading.Reader{All: true}, q, nil, 0, 50); err != nil || len(rows) == 0 {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			}
		})
		b.Run("like/"+term, func(b *testing.B) {
			for b.Loop() {
				if n := countRows(b, raw, "%"+term+"%"); n == 0 {
					b.Fatal("LIKE found nothing")
				}
			}
		})
	}
}

func seedBooks(b *testing.B, st *store.Store, lib int64) {
	b.Helper()
	ctx := context.Background()
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO library_files (library_id, relative_path, path_key, size_bytes, mtime_ns, format, created_at, updated_at)
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		SELECT %d, 'Series ' || (i %% 2000) || '/Issue ' || i || '.cbz', 'k' || i, 1, 1, 'zip',
		'2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000' FROM n`, benchBooks, lib),
		`INSERT INTO file_metadata (file_id, source, title, writer, updated_at)
		SELECT id, 'comicinfo', 'Chapter ' || id, 'Author' || (id % 500), '2026-01-01 00:00:00.000' FROM library_files`,
		`UPDATE file_metadata SET title = 'Zanzibar' WHERE file_id = (SELECT max(id) FROM library_files)`,
		storetest.AnalyzeSQL(),
	} {
		if _, err := storetest.Exec(ctx, st, q); err != nil {
			b.Fatal(err)
		}
	}
}

// countRows runs likeSearch and reads every row it answers.
func countRows(b *testing.B, db *sql.DB, pattern string) int {
	rows, err := db.QueryContext(context.Background(), likeSearch, pattern)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var path string
		var title, series sql.NullString
		if err := rows.Scan(&id, &path, &title, &series); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// settle is what autovacuum (PostgreSQL: it also empties the GIN index's
// pending list, which a bulk insert fills and every search then scans,
// 13 ms here) or a scan's optimize (SQLite) would have run by now.
