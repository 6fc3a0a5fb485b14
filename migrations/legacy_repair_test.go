package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/migrations"
)

// legacyHoles is a legacy database with every hole a DedupFS or pre-0.2
// database was seen to have: NULLs in columns the protocol makes NOT NULL,
// progress in percent, thumbnails without a group key or output path, and
// two active covers of one file and format.
const legacyHoles = `
CREATE TABLE libraries (id INTEGER PRIMARY KEY, name TEXT, path TEXT, created_at TEXT, updated_at TEXT);
CREATE TABLE jobs (id INTEGER PRIMARY KEY, kind TEXT, status TEXT, library_id INTEGER, priority TEXT, payload TEXT,
  progress REAL, attempt INTEGER, created_at TEXT, updated_at TEXT);
CREATE TABLE thumbnails (id INTEGER PRIMARY KEY, file_id INTEGER, library_id INTEGER, group_key TEXT, format TEXT,
  status TEXT, output_relpath TEXT, worker_id TEXT, lease_expires_at TEXT, created_at TEXT, updated_at TEXT);
CREATE TABLE wal_maintenance_jobs (id INTEGER PRIMARY KEY, requested_mode TEXT, status TEXT, execute_after TEXT,
  created_at TEXT, updated_at TEXT);
CREATE TABLE thumbnail_cleanup_jobs (id INTEGER PRIMARY KEY, group_key TEXT, status TEXT, created_at TEXT, updated_at TEXT);
INSERT INTO libraries VALUES (1, 'Comics', '/libraries/comics', '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000');
INSERT INTO jobs VALUES
  (1, 'SCAN', 'COMPLETED', 1, NULL, NULL, 100, NULL, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000'),
  (2, 'delete', 'failed', 1, 'normal', '{}', 42.5, 2, '2024-01-01 00:00:00.000', NULL),
  (3, 'hash', 'completed', NULL, 'normal', '{}', 0.25, 1, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000');
INSERT INTO thumbnails VALUES
  (1, 10, 1, NULL, 'webp', 'ready', 'covers/010/10.webp', NULL, NULL, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000'),
  (2, 11, 1, 'library:1', 'webp', 'READY', NULL, NULL, NULL, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000'),
  (3, 12, 1, 'library:1', 'webp', 'pending', 'covers/012/12.webp', NULL, NULL, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000'),
  (4, 12, 1, 'library:1', 'webp', 'running', 'covers/012/12.webp', 'w', '2024-01-01 00:01:00.000', '2024-01-02 00:00:00.000', '2024-01-02 00:00:00.000'),
  (5, 12, 1, 'library:1', 'jpeg', 'pending', 'covers/012/12.jpeg', NULL, NULL, '2024-01-02 00:00:00.000', '2024-01-02 00:00:00.000');
INSERT INTO wal_maintenance_jobs VALUES (1, 'passive', 'completed', NULL, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000');
INSERT INTO thumbnail_cleanup_jobs VALUES (1, 'file:10', 'pending', '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000');
`

func query(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

// TestLegacyRepairsEveryHole: each hole is repaired deterministically and
// counted under its code.
func TestLegacyRepairsEveryHole(t *testing.T) {
	db, _ := setup(t)
	if _, err := db.Exec(legacyHoles); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(context.Background(), db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	for q, want := range map[string]string{
		`SELECT group_concat(id || ':' || priority || ':' || payload || ':' || progress || ':' || attempt, ' ') FROM jobs`: "1:normal:{}:1.0:1 2:normal:{}:0.425:2 3:normal:{}:0.25:1",
		`SELECT group_concat(id || ':' || group_key || ':' || status || ':' || output_relpath || ':' || ifnull(error_code, '-'), ' ') FROM thumbnails`: "1:library:1:ready:covers/010/10.webp:- " +
			"2:library:1:pending:covers/011/11.webp:- 3:library:1:failed:covers/012/12.webp:migration_duplicate_active " +
			"4:library:1:running:covers/012/12.webp:- 5:library:1:pending:covers/012/12.jpeg:-",
		`SELECT length(execute_after) FROM wal_maintenance_jobs`:       "23",
		`SELECT length(execute_after) FROM thumbnail_cleanup_jobs`:     "23",
		`SELECT length(updated_at) FROM jobs WHERE id = 2`:             "23",
		`SELECT count(*) FROM sqlite_master WHERE name LIKE 'legacy%'`: "0",
		`SELECT group_concat(table_name || '.' || column_name || ' ' || code || ' ' || rows, '; ') FROM (SELECT * FROM migration_repairs WHERE version = 3 ORDER BY id)`: "jobs.priority migration_null_default 1; jobs.payload migration_null_default 1; " +
			"jobs.attempt migration_null_default 1; jobs.updated_at migration_null_time 1; jobs.progress migration_progress_percent 2; " +
			"thumbnails.group_key migration_null_group_key 1; thumbnails.output_relpath migration_null_output_path 1; " +
			"thumbnails.status migration_duplicate_active 1; wal_maintenance_jobs.execute_after migration_null_time 1",
	} {
		if got := query(t, db, q); got != want {
			t.Errorf("%s\n got %s\nwant %s", q, got, want)
		}
	}
}

// TestLegacyUnrepairable: a row no repair can save stops the migration
// with its table, row and constraint, and the database is left exactly as
// it was (tables, rows, no goose table), so the old release still runs.
func TestLegacyUnrepairable(t *testing.T) {
	for name, bad := range map[string]string{
		"unknown kind":       `INSERT INTO jobs VALUES (4, 'frobnicate', 'pending', 1, 'normal', '{}', 0, 1, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000')`,
		"no file of a cover": `INSERT INTO thumbnails (id, library_id, format, status, created_at, updated_at) VALUES (9, 1, 'webp', 'failed', '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000')`,
	} {
		t.Run(name, func(t *testing.T) {
			db, _ := setup(t)
			if _, err := db.Exec(legacyHoles + bad); err != nil {
				t.Fatal(err)
			}
			before := dumpSchema(t, db) + dumpRows(t, db)
			err := migrations.Up(context.Background(), db)
			if err == nil || !strings.Contains(err.Error(), "cannot be repaired") || !strings.Contains(err.Error(), "row ") {
				t.Fatalf("migrate: %v, want the row that cannot be repaired", err)
			}
			// goose's version table leaves SQLite's internal sqlite_sequence
			// behind (it cannot be dropped); it holds nothing of ours.
			after := strings.Replace(dumpSchema(t, db), "table sqlite_sequence CREATE TABLE sqlite_sequence(name,seq)\n", "", 1)
			if after += dumpRows(t, db); after != before {
				t.Fatalf("the database changed:\n%s\nthen\n%s", before, after)
			}
			if n := query(t, db, `SELECT count(*) FROM sqlite_master WHERE name LIKE 'goose%' OR name LIKE 'legacy%'`); n != "0" {
				t.Fatalf("%s goose or legacy tables left", n)
			}
		})
	}
}

func dumpRows(t *testing.T, db *sql.DB) string {
	var b strings.Builder
	for _, table := range []string{"libraries", "jobs", "thumbnails", "wal_maintenance_jobs", "thumbnail_cleanup_jobs"} {
		fmt.Fprintf(&b, "%s: %s\n", table, query(t, db, `SELECT group_concat(quote(id), ',') FROM `+table))
		fmt.Fprintf(&b, "%s: %s\n", table, query(t, db, `SELECT group_concat(quote(created_at) || quote(updated_at), ',') FROM `+table))
	}
	return b.String()
}

// BenchmarkLegacyImport migrates a legacy database of 200,000 rows (jobs,
// files of one library, thumbnails), trial included: the figure in
// docs/PERFORMANCE-NOTES.md.
func BenchmarkLegacyImport(b *testing.B) {
	const rows = 200_000
	for range b.N {
		b.StopTimer()
		db, err := sql.Open("sqlite3", "file:"+b.TempDir()+"/legacy.db?_foreign_keys=off&_busy_timeout=5000")
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(legacyHoles + fmt.Sprintf(`
CREATE TABLE library_files (id INTEGER PRIMARY KEY, library_id INTEGER, relative_path TEXT, size_bytes INTEGER,
  mtime_ns INTEGER, created_at TEXT, updated_at TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[1]d)
INSERT INTO library_files SELECT i, 1, 'Series ' || (i / 50) || '/Book ' || i || '.cbz', 1000 + i, i, '2024-01-01 00:00:00', NULL FROM n;
WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < %[2]d)
INSERT INTO jobs SELECT i, 'HASH', 'COMPLETED', 1, NULL, NULL, 100, NULL, '2024-01-01T00:00:00.123456+00:00', NULL FROM n;
WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < %[2]d)
INSERT INTO thumbnails SELECT i, i, 1, NULL, 'webp', 'READY', NULL, NULL, NULL, '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000' FROM n;`,
			rows*3/4, rows/8)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		b.StartTimer()
		if err := migrations.Up(context.Background(), db); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
		db.Close()
	}
}
