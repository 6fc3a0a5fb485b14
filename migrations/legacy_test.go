package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/migrations"
)

// legacySchema is a database written before the protocol's CHECKs and the
// single-active index: enums stored as names, several active scan/hash rows.
const legacySchema = `
CREATE TABLE libraries (id INTEGER PRIMARY KEY, name TEXT, path TEXT, created_at TEXT, updated_at TEXT);
CREATE TABLE jobs (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL, library_id INTEGER,
  priority TEXT, payload TEXT, worker_id TEXT, worker_heartbeat_at TEXT, lease_expires_at TEXT,
  error_code TEXT, error_message TEXT, created_at TEXT, updated_at TEXT);
CREATE INDEX ix_jobs_single_active_scan_hash ON jobs(kind);
CREATE TABLE thumbnails (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, library_id INTEGER NOT NULL,
  group_key TEXT NOT NULL, media_type TEXT, format TEXT, status TEXT, output_relpath TEXT NOT NULL,
  created_at TEXT, updated_at TEXT);
CREATE TABLE wal_maintenance_jobs (id INTEGER PRIMARY KEY, requested_mode TEXT, status TEXT,
  execute_after TEXT NOT NULL, created_at TEXT, updated_at TEXT);
INSERT INTO libraries VALUES (1, 'Comics', '/libraries/comics', '2024-01-01 00:00:00.000', NULL);
INSERT INTO jobs (id, kind, status, library_id, priority, payload, worker_id, lease_expires_at, created_at, updated_at) VALUES
  (1, 'SCAN', 'COMPLETED', 1, 'NORMAL', '{}', NULL, NULL, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000'),
  (2, 'HASH', 'RUNNING',   1, 'HIGH',   '{}', 'w1', '2024-01-02 00:00:10.000', '2024-01-02 00:00:00.000', '2024-01-02 00:00:00.000'),
  (3, 'Scan', 'Running',   1, 'normal', '{}', 'w2', '2024-01-02 00:00:10.000', '2024-01-01 12:00:00.000', '2024-01-01 12:00:00.000'),
  (4, 'scan', 'RUNNING',   1, 'normal', '{}', 'w3', '2024-01-02 00:00:10.000', '2024-01-01 12:00:00.000', '2024-01-01 12:00:00.000'),
  (5, 'SCAN', 'PENDING',   1, 'NORMAL', '{}', NULL, NULL, '2023-12-31 00:00:00.000', '2023-12-31 00:00:00.000'),
  (6, 'HASH', 'PENDING',   NULL, 'NORMAL', '{}', NULL, NULL, '2024-01-03 00:00:00.000', '2024-01-03 00:00:00.000'),
  (7, 'DELETE', 'PENDING', 1, 'NORMAL', '{}', NULL, NULL, '2024-01-03 00:00:00.000', '2024-01-03 00:00:00.000');
INSERT INTO thumbnails VALUES (1, 10, 1, 'library:1', 'IMAGE', 'WEBP', 'READY', 'covers/010/10.webp', '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000');
INSERT INTO wal_maintenance_jobs VALUES (1, 'TRUNCATE', 'RETRYABLE', '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000');
`

func TestLegacyRepair(t *testing.T) {
	ctx := context.Background()
	db, _ := setup(t)
	if _, err := db.Exec(legacySchema); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("migrate legacy: %v", err)
	}

	type row struct {
		kind, status, priority string
		code                   *string
	}
	got := map[int]row{}
	rows, err := db.Query("SELECT id, kind, status, priority, error_code FROM jobs ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		var r row
		if err := rows.Scan(&id, &r.kind, &r.status, &r.priority, &r.code); err != nil {
			t.Fatal(err)
		}
		got[id] = r
	}
	rows.Close()

	code := func(id int) string {
		if got[id].code == nil {
			return ""
		}
		return *got[id].code
	}
	t.Run("enums lowercased", func(t *testing.T) {
		if got[1].kind != "scan" || got[1].status != "completed" || got[1].priority != "normal" {
			t.Fatalf("job 1 = %+v", got[1])
		}
		if got[7].kind != "delete" || got[7].status != "pending" {
			t.Fatalf("non-scan job 7 = %+v", got[7])
		}
		var media, format, status, mode, walStatus string
		db.QueryRow("SELECT media_type, format, status FROM thumbnails").Scan(&media, &format, &status)
		db.QueryRow("SELECT requested_mode, status FROM wal_maintenance_jobs").Scan(&mode, &walStatus)
		if media != "image" || format != "webp" || status != "ready" || mode != "truncate" || walStatus != "retryable" {
			t.Fatalf("thumbnail %s/%s/%s wal %s/%s", media, format, status, mode, walStatus)
		}
	})
	t.Run("oldest running wins, smallest id breaks the tie", func(t *testing.T) {
		if got[3].status != "running" || code(3) != "" {
			t.Fatalf("winner 3 = %+v", got[3])
		}
		for _, id := range []int{2, 4} {
			if got[id].status != "retryable" || code(id) != "migration_mutex_recovery" {
				t.Fatalf("job %d = %+v code %q", id, got[id], code(id))
			}
		}
	})
	t.Run("surplus pending become retryable", func(t *testing.T) {
		for _, id := range []int{5, 6} {
			if got[id].status != "retryable" || code(id) != "migration_active_recovery" {
				t.Fatalf("job %d = %+v code %q", id, got[id], code(id))
			}
		}
	})
	t.Run("index rebuilt and enforced", func(t *testing.T) {
		_, err := db.Exec("INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('hash','pending','2024-01-05 00:00:00.000','2024-01-05 00:00:00.000')")
		if err == nil || !strings.Contains(err.Error(), "UNIQUE") {
			t.Fatal("second active scan/hash row accepted")
		}
		var def string
		db.QueryRow("SELECT sql FROM sqlite_master WHERE name='ix_jobs_single_active_scan_hash'").Scan(&def)
		if def == "" || !strings.Contains(def, "lower(status)") {
			t.Fatalf("index definition %q", def)
		}
	})
	t.Run("no legacy tables left and second migrate is a no-op", func(t *testing.T) {
		var n int
		db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name LIKE 'legacy_%'").Scan(&n)
		if n != 0 {
			t.Fatalf("%d legacy objects left", n)
		}
		before := dumpSchema(t, db)
		var jobsBefore int
		db.QueryRow("SELECT count(*) FROM jobs").Scan(&jobsBefore)
		if err := migrations.Up(ctx, db); err != nil {
			t.Fatal(err)
		}
		var jobsAfter int
		db.QueryRow("SELECT count(*) FROM jobs").Scan(&jobsAfter)
		if dumpSchema(t, db) != before || jobsAfter != jobsBefore {
			t.Fatal("second migration changed something")
		}
	})
	t.Run("missing timestamps filled", func(t *testing.T) {
		var updated string
		db.QueryRow("SELECT updated_at FROM libraries WHERE id=1").Scan(&updated)
		if len(updated) != len("2006-01-02 15:04:05.000") {
			t.Fatalf("updated_at %q", updated)
		}
	})
}
