package migrations

import (
	"context"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/internal/natsort"
)

// TestFileRolesRebuild: a database at version 13 keeps its rows, ids,
// metadata links, indexes and triggers through the rebuild of migration
// 14, every row a book, and the new CHECKs hold.
func TestFileRolesRebuild(t *testing.T) {
	ctx := context.Background()
	db, p := migratedTo(t, 13)
	const now = "2026-01-01 00:00:00.000"
	for _, q := range []string{
		`INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'l', '/l', '` + now + `', '` + now + `')`,
		`INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, format, created_at, updated_at)
			VALUES (7, 1, 'a/1.jpg', 10, 1, 'image', '` + now + `', '` + now + `'), (9, 1, 'a/b.cbz', 10, 1, 'zip', '` + now + `', '` + now + `')`,
		`INSERT INTO file_metadata (file_id, source, updated_at) VALUES (9, 'folder', '` + now + `')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	objects := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE tbl_name = 'library_files'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := objects()
	if _, err := p.UpTo(ctx, 14); err != nil {
		t.Fatal(err)
	}
	if got := objects(); got != before+2 { // + ix_library_files_sidecars, ix_library_files_path_order
		t.Fatalf("library_files has %d schema objects after the rebuild, %d before", got, before)
	}
	var roles string
	if err := db.QueryRowContext(ctx, `SELECT group_concat(id || ':' || role, ',') FROM (SELECT id, role FROM library_files ORDER BY id)`).
		Scan(&roles); err != nil {
		t.Fatal(err)
	}
	if roles != "7:book,9:book" {
		t.Fatalf("roles %q", roles)
	}
	var key string
	if err := db.QueryRowContext(ctx, `SELECT path_key FROM library_files WHERE id = 9`).Scan(&key); err != nil || key != natsort.Key("a/b.cbz") {
		t.Fatalf("path key %q, %v", key, err)
	}
	var problems int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&problems); err != nil || problems != 0 {
		t.Fatalf("foreign key check: %d problems, %v", problems, err)
	}
	t.Run("checks", func(t *testing.T) {
		ok := `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, format, role, created_at, updated_at)
			VALUES (1, 'f/', 20, 1, 'folder', 'folder', '` + now + `', '` + now + `')`
		if _, err := db.ExecContext(ctx, ok); err != nil {
			t.Fatalf("a folder book refused: %v", err)
		}
		for _, role := range []string{"Book", "pages", ""} {
			_, err := db.ExecContext(ctx, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, role, created_at, updated_at)
				VALUES (1, hex(randomblob(8)), 1, 1, ?, '`+now+`', '`+now+`')`, role)
			if err == nil {
				t.Errorf("role %q accepted", role)
			}
		}
	})
	t.Run("triggers", func(t *testing.T) {
		// The time triggers came back: a non-canonical time is refused.
		_, err := db.ExecContext(ctx, `UPDATE library_files SET updated_at = 'yesterday' WHERE id = 7`)
		if err == nil {
			t.Fatal("a non-canonical time was accepted: the time triggers were lost")
		}
	})
}
