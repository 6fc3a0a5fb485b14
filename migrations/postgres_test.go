package migrations

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bindery-nas/bindery/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// setupPostgres migrates a fresh database on the shared test server and
// returns it open as the superuser, with its name.
func setupPostgres(t *testing.T) (*sql.DB, string) {
	t.Helper()
	name := pgtest.NewDatabase(t)
	db, err := sql.Open("pgx", pgtest.Shared(t).DSN(name, pgtest.Superuser))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := UpPostgres(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db, name
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

const pgNow = "'2026-01-01 00:00:00.000+00'"

// TestPostgresSchema: the PostgreSQL schema keeps the protocol's rules
// for every writer, as SQLite's does: lowercase enums only, one active
// scan/hash job, settled thumbnails only deleted, duplicate groups kept
// by triggers, a partial digest dropped when its file changes.
func TestPostgresSchema(t *testing.T) {
	ctx := context.Background()
	db, _ := setupPostgres(t)
	exec := func(t *testing.T, q string, args ...any) error {
		t.Helper()
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	must := func(t *testing.T, q string, args ...any) {
		t.Helper()
		if err := exec(t, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Run("migrating again is a no-op at the latest version", func(t *testing.T) {
		if err := UpPostgres(ctx, db); err != nil {
			t.Fatal(err)
		}
		var v int64
		if err := db.QueryRowContext(ctx, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&v); err != nil || v != Latest() {
			t.Fatalf("version %d, %v; want %d", v, err, Latest())
		}
	})
	must(t, `INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'l', '/l', `+pgNow+`, `+pgNow+`)`)
	t.Run("enums are lowercase and checked", func(t *testing.T) {
		for _, q := range []string{
			`INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('SCAN', 'pending', ` + pgNow + `, ` + pgNow + `)`,
			`INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('scan', 'PENDING', ` + pgNow + `, ` + pgNow + `)`,
			`INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, format, created_at, updated_at)
				VALUES (1, 'x', 1, 1, 'mp4', ` + pgNow + `, ` + pgNow + `)`,
			`UPDATE libraries SET media = 'Comics'`,
			`INSERT INTO delete_plans (policy, group_count, remove_count, bytes_freed, created_at, expires_at)
				VALUES ('largest', 0, 0, 0, ` + pgNow + `, ` + pgNow + `)`,
			`INSERT INTO delete_plans (policy, group_kind, group_count, remove_count, bytes_freed, created_at, expires_at)
				VALUES ('smallest', 'contains', 0, 0, 0, ` + pgNow + `, ` + pgNow + `)`,
		} {
			if err := exec(t, q); sqlState(err) != "23514" {
				t.Errorf("%s: %v, want a check violation", q, err)
			}
		}
	})
	t.Run("same-book plans (migration 28)", func(t *testing.T) {
		must(t, `INSERT INTO delete_plans (id, policy, group_kind, group_count, remove_count, bytes_freed, created_at, expires_at)
			VALUES (50, 'prefer_format', 'same_pages', 0, 0, 0, `+pgNow+`, `+pgNow+`)`)
		must(t, `INSERT INTO delete_plans (id, policy, group_count, remove_count, bytes_freed, created_at, expires_at)
			VALUES (51, 'smallest', 0, 0, 0, `+pgNow+`, `+pgNow+`)`)
		var kind string
		if err := db.QueryRowContext(ctx, `SELECT group_kind FROM delete_plans WHERE id = 51`).Scan(&kind); err != nil || kind != "bytes" {
			t.Fatalf("default group_kind %q, %v", kind, err)
		}
		for _, n := range []int{31, 33} {
			err := exec(t, `INSERT INTO delete_plan_files (plan_id, seq, group_seq, file_id, library_id, relative_path, decision,
				size_bytes, mtime_ns, hash_algorithm, content_hash, group_key)
				VALUES (50, 0, 0, 1, 1, 'a', 'keep', 1, 1, 'blake3', decode(repeat('aa', 32), 'hex'), decode(repeat('bb', $1), 'hex'))`, n)
			if sqlState(err) != "23514" {
				t.Errorf("a %d-byte group key: %v, want a check violation", n, err)
			}
		}
		must(t, `DELETE FROM delete_plans WHERE id IN (50, 51)`)
	})
	t.Run("one active scan or hash job", func(t *testing.T) {
		must(t, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('scan', 'completed', `+pgNow+`, `+pgNow+`)`)
		must(t, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('scan', 'pending', `+pgNow+`, `+pgNow+`)`)
		for _, kind := range []string{"scan", "hash"} {
			err := exec(t, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ($1, 'running', `+pgNow+`, `+pgNow+`)`, kind)
			if sqlState(err) != "23505" {
				t.Errorf("a second active %s job: %v, want a unique violation", kind, err)
			}
		}
		must(t, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('thumbnail', 'pending', `+pgNow+`, `+pgNow+`)`)
	})
	t.Run("only settled thumbnails are deleted", func(t *testing.T) {
		must(t, `INSERT INTO thumbnails (id, file_id, library_id, group_key, status, output_relpath, created_at, updated_at)
			VALUES (1, 1, 1, 'library:1', 'pending', 'covers/001/1.webp', `+pgNow+`, `+pgNow+`)`)
		if err := exec(t, `DELETE FROM thumbnails WHERE id = 1`); err == nil || !strings.Contains(err.Error(), "only ready or failed") {
			t.Fatalf("deleting a pending thumbnail: %v", err)
		}
		must(t, `UPDATE thumbnails SET status = 'ready' WHERE id = 1`)
		must(t, `DELETE FROM thumbnails WHERE id = 1`)
	})
	t.Run("duplicate groups follow the files", func(t *testing.T) {
		groups := func() string {
			var s sql.NullString
			if err := db.QueryRowContext(ctx, `SELECT string_agg(encode(substr(content_hash, 1, 1), 'hex') || ':' || file_count || ':' ||
				total_size_bytes || ':' || neg_file_count, ',' ORDER BY content_hash) FROM duplicate_groups`).Scan(&s); err != nil {
				t.Fatal(err)
			}
			return s.String
		}
		for i, h := range []string{"aa", "aa", "aa", "bb"} {
			must(t, `INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, needs_hash, hash_algorithm,
				content_hash, created_at, updated_at) VALUES ($1, 1, $2, 10, 1, 0, 'blake3', decode(repeat($3, 32), 'hex'), `+pgNow+`, `+pgNow+`)`,
				100+i, "f"+string(rune('0'+i)), h)
		}
		if g := groups(); g != "aa:3:30:-3,bb:1:10:-1" {
			t.Fatalf("groups after insert %q", g)
		}
		must(t, `UPDATE library_files SET is_missing = 1 WHERE id = 100`)
		must(t, `UPDATE library_files SET content_hash = decode(repeat('bb', 32), 'hex') WHERE id = 101`)
		must(t, `UPDATE library_files SET updated_at = `+pgNow+` WHERE id = 102`)
		if g := groups(); g != "aa:1:10:-1,bb:2:20:-2" {
			t.Fatalf("groups after updates %q", g)
		}
		must(t, `DELETE FROM library_files WHERE id IN (102, 103)`)
		if g := groups(); g != "bb:1:10:-1" {
			t.Fatalf("groups after delete %q", g)
		}
	})
	t.Run("a changed file loses its partial digest", func(t *testing.T) {
		must(t, `UPDATE library_files SET partial_hash = decode(repeat('cc', 32), 'hex') WHERE id = 101`)
		must(t, `UPDATE library_files SET mtime_ns = 2 WHERE id = 101`)
		var null bool
		if err := db.QueryRowContext(ctx, `SELECT partial_hash IS NULL FROM library_files WHERE id = 101`).Scan(&null); err != nil || !null {
			t.Fatalf("partial hash kept after an mtime change (%v)", err)
		}
	})
}

// TestPostgresWorkerGrants repeats against PostgreSQL the forbidden writes
// SQLite's authorizer refuses (internal/store's TestWorkerAuthorizer):
// workerd's role gets "permission denied" for each, and may still do what
// protocol §7 allows.
func TestPostgresWorkerGrants(t *testing.T) {
	ctx := context.Background()
	db, name := setupPostgres(t)
	role := "w_" + name
	grants, err := WorkerGrants(role)
	if err != nil {
		t.Fatal(err)
	}
	srv := pgtest.Shared(t)
	if err := srv.Exec(ctx, name, append([]string{"CREATE ROLE " + role + " LOGIN"}, grants...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Exec(ctx, "postgres", "DROP OWNED BY "+role, "DROP ROLE IF EXISTS "+role) })
	for _, q := range []string{
		`INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'L', '/l', ` + pgNow + `, ` + pgNow + `)`,
		`INSERT INTO jobs (id, kind, created_at, updated_at) VALUES (1, 'scan', ` + pgNow + `, ` + pgNow + `)`,
		`INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, created_at, updated_at)
			VALUES (1, 1, 'g', 'ready', 'x', ` + pgNow + `, ` + pgNow + `)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	worker, err := sql.Open("pgx", srv.DSN(name, role))
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	denied := []string{
		`UPDATE jobs SET kind = 'hash' WHERE id = 1`,
		`UPDATE jobs SET payload = '{"force":true}' WHERE id = 1`,
		`UPDATE jobs SET priority = 'high' WHERE id = 1`,
		`UPDATE jobs SET attempt = 9 WHERE id = 1`,
		`UPDATE jobs SET cancel_requested = 0 WHERE id = 1`,
		`INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', ` + pgNow + `, ` + pgNow + `)`,
		`DELETE FROM jobs`,
		`INSERT INTO settings (key, value, updated_at) VALUES ('jobs.max_attempts', '99', ` + pgNow + `)`,
		`UPDATE settings SET value = '1'`,
		`UPDATE libraries SET path = '/etc'`,
		`DELETE FROM libraries`,
		`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at) VALUES (1, 1, 'g', 'x', ` + pgNow + `, ` + pgNow + `)`,
		`UPDATE thumbnails SET output_relpath = '../../etc/passwd'`,
		`UPDATE thumbnail_cleanup_jobs SET group_key = 'other'`,
		`UPDATE wal_maintenance_jobs SET requested_mode = 'truncate'`,
		`INSERT INTO scan_requests (kind, priority, created_at, updated_at) VALUES ('scan', 'high', ` + pgNow + `, ` + pgNow + `)`,
		`CREATE TABLE evil (x int)`,
		`DROP INDEX ix_jobs_single_active_scan_hash`,
		`UPDATE libraries SET allow_delete = 1`,
		`INSERT INTO delete_plans (policy, group_count, remove_count, bytes_freed, created_at, expires_at) VALUES ('oldest', 0, 0, 0, ` + pgNow + `, ` + pgNow + `)`,
	}
	for _, q := range denied {
		if _, err := worker.ExecContext(ctx, q); sqlState(err) != "42501" {
			t.Errorf("%s: %v, want permission denied", q, err)
		}
	}
	var kind string
	if err := db.QueryRowContext(ctx, `SELECT kind || priority || payload FROM jobs WHERE id = 1`).Scan(&kind); err != nil || kind != "scannormal{}" {
		t.Fatalf("policy columns changed: %q %v", kind, err)
	}
	for _, q := range []string{
		`UPDATE jobs SET processed_items = 1, status = 'running', worker_id = 'w' WHERE id = 1`,
		`INSERT INTO workers (worker_id, host, pid, version, started_at, last_seen_at) VALUES ('w', 'h', 1, 'v', ` + pgNow + `, ` + pgNow + `)`,
		`INSERT INTO io_rate_limits (bucket_key, next_available_at_ms, updated_at) VALUES ('b', 0, ` + pgNow + `)
			ON CONFLICT (bucket_key) DO UPDATE SET next_available_at_ms = excluded.next_available_at_ms`,
		`INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, created_at, updated_at) VALUES (1, 'a.cbz', 1, 1, ` + pgNow + `, ` + pgNow + `)`,
		`INSERT INTO video_probes (file_id, container, duration_ms, probed_at) SELECT id, 'mp4', 1, ` + pgNow + ` FROM library_files`,
		`DELETE FROM thumbnails WHERE status = 'ready'`,
	} {
		if _, err := worker.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
