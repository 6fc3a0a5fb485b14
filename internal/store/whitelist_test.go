package store_test

import (
	"context"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

// TestWorkerAuthorizer proves that the database itself (SQLite's
// authorizer, PostgreSQL's grants) refuses workerd writes
// outside protocol §7: policy columns, settings, libraries, schema.
func TestWorkerAuthorizer(t *testing.T) {
	db := storetest.MustOpenClockedDB(t)
	ctx := context.Background()
	id := testfactory.Job(t, db.Control, nil)
	testfactory.Library(t, db.Control, &testfactory.LibraryOpts{ID: 1})
	denied := []string{
		`UPDATE jobs SET kind = 'hash' WHERE id = 1`,
		`UPDATE jobs SET payload = '{"force":true}' WHERE id = 1`,
		`UPDATE jobs SET priority = 'high' WHERE id = 1`,
		`UPDATE jobs SET attempt = 9 WHERE id = 1`,
		`UPDATE jobs SET cancel_requested = 0 WHERE id = 1`,
		`INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`DELETE FROM jobs`,
		`INSERT INTO settings (key, value, updated_at) VALUES ('jobs.max_attempts', '99', '2026-01-01 00:00:00.000')`,
		`UPDATE settings SET value = '1'`,
		`UPDATE libraries SET path = '/etc'`,
		`DELETE FROM libraries`,
		`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at) VALUES (1, 1, 'g', 'x', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`UPDATE thumbnails SET output_relpath = '../../etc/passwd'`,
		`UPDATE thumbnail_cleanup_jobs SET group_key = 'other'`,
		`UPDATE wal_maintenance_jobs SET requested_mode = 'truncate'`,
		`INSERT INTO scan_requests (kind, priority, created_at, updated_at) VALUES ('scan', 'high', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`CREATE TABLE evil (x integer)`,
		`DROP INDEX ix_jobs_single_active_scan_hash`,
	}
	for _, q := range denied {
		_, err := storetest.Exec(ctx, db.Worker, q)
		if !store.IsAuthDenied(err) {
			t.Errorf("%s: err = %v, want authorizer denial", q, err)
		}
	}
	if got, err := storetest.QueryText(ctx, db.Control, `SELECT kind || priority || payload FROM jobs WHERE id = ?`, id); err != nil || got != "scannormal{}" {
		t.Fatalf("policy columns changed: %s, %v", got, err)
	}
	allowed := []string{
		`UPDATE jobs SET processed_items = 1 WHERE id = 1`,
		`INSERT INTO workers (worker_id, host, pid, version, started_at, last_seen_at) VALUES ('w', 'h', 1, 'v', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO io_rate_limits (bucket_key, next_available_at_ms, updated_at) VALUES ('b', 0, '2026-01-01 00:00:00.000')`,
		`DELETE FROM thumbnails WHERE status = 'ready'`,
	}
	for _, q := range allowed {
		if _, err := storetest.Exec(ctx, db.Worker, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
