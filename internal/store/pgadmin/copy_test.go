package pgadmin_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/pgadmin"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// TestCopyToPostgres moves an SQLite database of 20,000 files (10,000
// duplicate pairs, covers, jobs, changed settings) into PostgreSQL: every
// row arrives with its id, the duplicate groups are the same, new rows get
// fresh ids, and a second copy into the now used database is refused.
func TestCopyToPostgres(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("PostgreSQL only: run with " + storetest.EngineVar + "=postgres")
	}
	ctx := context.Background()
	from := filepath.Join(t.TempDir(), "bindery.db")
	if err := store.Migrate(ctx, from); err != nil {
		t.Fatal(err)
	}
	src := storetest.MustOpen(t, from, store.RoleControl, nil)
	now := protocol.FormatTime(src.Now())
	lib, err := src.CreateLibrary(ctx, store.NewLibrary{Name: "comics", Path: "/libraries/comics"})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
		INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, hash_algorithm, content_hash,
			needs_hash, created_at, updated_at)
		SELECT ?1, printf('series %d/book %d.cbz', i % 997, i), 1000 + i % 10000, i, 'blake3',
			CAST(printf('%032d', i % 10000) AS BLOB), 0, ?2, ?2 FROM n`,
		`INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, created_at, updated_at)
		SELECT id, library_id, 'library:' || library_id, 'ready', 'covers/' || id || '.webp', ?2, ?2
		FROM library_files WHERE id % 10 = 0 AND ?1 = ?1`,
		`INSERT INTO jobs (kind, status, library_id, worker_id, lease_expires_at, created_at, updated_at)
		VALUES ('scan', 'running', ?1, 'gone', ?2, ?2, ?2)`,
		`INSERT INTO settings (key, value, updated_at) VALUES ('scan.cover.width', '512', ?2) ON CONFLICT (key) DO UPDATE SET value = '512' WHERE ?1 = ?1`,
		// A same-book plan (migration 28): its kind and its group key.
		`INSERT INTO delete_plans (id, policy, group_kind, group_count, remove_count, bytes_freed, created_at, expires_at)
		VALUES (1, 'prefer_format', 'same_pages', 1, 1, 1000, ?2, ?2)`,
		`INSERT INTO delete_plan_files (plan_id, seq, group_seq, file_id, library_id, relative_path, decision, size_bytes, mtime_ns,
			hash_algorithm, content_hash, library_path, group_key)
		SELECT 1, 0, 0, id, ?1, relative_path, 'keep', size_bytes, mtime_ns, 'blake3', content_hash, '/libraries/comics', content_hash
		FROM library_files WHERE id = 1 AND ?2 = ?2`,
	} {
		if _, err := storetest.Exec(ctx, src, q, lib.ID, now); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	to := storetest.MustMigrate(t)
	var copied []string
	if err := pgadmin.CopyToPostgres(ctx, from, to, func(table string, n int64) {
		copied = append(copied, fmt.Sprintf("%s=%d", table, n))
	}); err != nil {
		t.Fatal(err)
	}
	dst := storetest.MustOpen(t, to, store.RoleControl, nil)
	for _, q := range []string{
		`SELECT count(*) FROM library_files`, `SELECT sum(id) FROM library_files`, `SELECT count(*) FROM thumbnails`,
		`SELECT count(*) FROM jobs WHERE status = 'running'`, `SELECT count(*) FROM duplicate_groups`,
		`SELECT count(*) FROM settings WHERE key = 'scan.cover.width' AND value = '512'`,
		`SELECT count(*) FROM delete_plans WHERE group_kind = 'same_pages' AND policy = 'prefer_format'`,
		`SELECT count(*) FROM delete_plan_files WHERE length(group_key) = 32`,
	} {
		want, err := storetest.QueryInt(ctx, src, q)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := storetest.QueryInt(ctx, dst, q); err != nil || got != want {
			t.Errorf("%s: %d on PostgreSQL (%v), %d on SQLite", q, got, err, want)
		}
	}
	srcGroups, err := duplicates.New(src).DuplicateGroups(ctx, nil, 20)
	if err != nil {
		t.Fatal(err)
	}
	dstGroups, err := duplicates.New(dst).DuplicateGroups(ctx, nil, 20)
	if err != nil || !reflect.DeepEqual(srcGroups, dstGroups) || len(dstGroups) != 20 {
		t.Fatalf("duplicate groups: %v\nPostgreSQL %+v\nSQLite %+v", err, dstGroups, srcGroups)
	}
	// The search index is built by the target's triggers as rows arrive.
	q, _ := reading.ParseSearch("Book 12345")
	for _, st := range []*store.Store{src, dst} {
		found, err := reading.New(st).SearchBooks(ctx, reading.Reader{All: true}, q, nil, 0, 50)
		if err != nil || len(found) != 1 || !strings.HasSuffix(found[0].RelativePath, "/book 12345.cbz") {
			t.Errorf("search after the copy: %+v, %v", found, err)
		}
	}
	next, err := dst.CreateLibrary(ctx, store.NewLibrary{Name: "manga", Path: "/libraries/manga"})
	if err != nil || next.ID <= lib.ID {
		t.Fatalf("a library after the copy: %+v, %v", next, err)
	}
	if err := pgadmin.CopyToPostgres(ctx, from, to, nil); !errors.Is(err, pgadmin.ErrTargetNotEmpty) {
		t.Fatalf("a second copy: %v", err)
	}
	t.Logf("copied %s", strings.Join(copied, " "))
}
