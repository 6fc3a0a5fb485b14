package migrations

import (
	"context"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// TestSameBookPlansMigration: a database at version 27 keeps its plans,
// their ids, files, claims and time triggers through migration 28's
// rebuild of delete_plans; old plans are byte plans; the new policies and
// kind are accepted, and the CHECKs refuse other values, other cases and
// a group key that is not 32 bytes.
func TestSameBookPlansMigration(t *testing.T) {
	ctx := context.Background()
	db, p := migratedTo(t, 27)
	const now = "2026-01-01 00:00:00.000"
	exec := func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(t, `INSERT INTO jobs (id, kind, status, priority, payload, created_at, updated_at)
		VALUES (3, 'delete', 'pending', 'normal', '{"plan_id":7}', ?, ?)`, now, now)
	exec(t, `INSERT INTO delete_plans (id, policy, action, group_count, remove_count, bytes_freed, job_id, created_at, expires_at)
		VALUES (7, 'oldest', 'trash', 1, 1, 10, 3, ?, ?)`, now, now)
	exec(t, `INSERT INTO delete_plan_files (plan_id, seq, group_seq, file_id, library_id, relative_path, decision, size_bytes,
		mtime_ns, hash_algorithm, content_hash) VALUES (7, 0, 0, 5, 1, 'a.cbz', 'keep', 10, 1, 'blake3', zeroblob(32))`)
	exec(t, `INSERT INTO delete_claims (file_id, plan_id, job_id) VALUES (5, 7, 3)`)
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.QueryRowContext(ctx, `SELECT id || ' ' || policy || ' ' || group_kind || ' ' || job_id || ' ' || created_at
		FROM delete_plans`).Scan(&got); err != nil || got != "7 oldest bytes 3 "+now {
		t.Fatalf("plan kept as %q, %v", got, err)
	}
	exec(t, `INSERT INTO delete_plans (id, policy, group_kind, group_count, remove_count, bytes_freed, created_at, expires_at)
		VALUES (8, 'prefer_format', 'same_pages', 1, 1, 10, '2026-01-01T00:00:00Z', ?)`, now)
	exec(t, `UPDATE delete_plans SET policy = 'smallest' WHERE id = 8`)
	exec(t, `UPDATE delete_plan_files SET group_key = zeroblob(32) WHERE plan_id = 7`)
	if err := db.QueryRowContext(ctx, `SELECT created_at FROM delete_plans WHERE id = 8`).Scan(&got); err != nil || got != now {
		t.Fatalf("time trigger lost: created_at %q, %v", got, err)
	}
	for _, q := range []string{
		`UPDATE delete_plans SET policy = 'largest' WHERE id = 8`,
		`UPDATE delete_plans SET policy = 'Smallest' WHERE id = 8`,
		`UPDATE delete_plans SET group_kind = 'contains' WHERE id = 8`,
		`UPDATE delete_plans SET group_kind = 'Same_Pages' WHERE id = 8`,
		`UPDATE delete_plans SET group_kind = NULL WHERE id = 8`,
		`UPDATE delete_plans SET expires_at = 'tomorrow' WHERE id = 8`,
		`UPDATE delete_plan_files SET group_key = zeroblob(31) WHERE plan_id = 7`,
	} {
		if _, err := db.ExecContext(ctx, q); err == nil {
			t.Errorf("accepted: %s", q)
		}
	}
	exec(t, `PRAGMA foreign_keys = ON`)
	exec(t, `DELETE FROM delete_plans WHERE id = 7`)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM delete_plan_files) + (SELECT count(*) FROM delete_claims)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d plan files or claims outlived their plan (%v)", n, err)
	}
}
