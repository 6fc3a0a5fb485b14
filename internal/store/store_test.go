package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

// enumCases is every enum column of protocol §3 and the product's own,
// with one legal value and the row an insert needs around it.
var enumCases = []struct {
	table, column, legal string
	insert               string // %s is replaced by the value under test
}{
	{"jobs", "kind", "scan", `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES (%s, 'completed', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"jobs", "status", "completed", `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('delete', %s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"jobs", "priority", "high", `INSERT INTO jobs (kind, status, priority, created_at, updated_at) VALUES ('delete', 'completed', %s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"scan_sessions", "status", "running", `INSERT INTO scan_sessions (library_id, status, started_at) VALUES (1, %s, '2026-01-01 00:00:00.000')`},
	{"library_files", "hash_algorithm", "blake3", `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, hash_algorithm, created_at, updated_at) VALUES (1, 'f' || (SELECT count(*) FROM library_files), 1, 1, %s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"library_files", "format", "zip", `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, format, created_at, updated_at) VALUES (1, 'f' || (SELECT count(*) FROM library_files), 1, 1, %s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"library_files", "role", "sidecar", `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, role, created_at, updated_at) VALUES (1, 'f' || (SELECT count(*) FROM library_files), 1, 1, %s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"thumbnails", "status", "ready", `INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, created_at, updated_at) VALUES ((SELECT count(*) + 100 FROM thumbnails), 1, 'library:1', %s, 'c', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"thumbnails", "media_type", "image", `INSERT INTO thumbnails (file_id, library_id, group_key, status, media_type, output_relpath, created_at, updated_at) VALUES (1, 1, 'library:1', 'ready', %s, 'c', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"thumbnails", "format", "jpeg", `INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, created_at, updated_at) VALUES (1, 1, 'library:1', 'ready', %s, 'c', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"thumbnails", "task", "hash", `INSERT INTO thumbnails (file_id, library_id, group_key, status, task, output_relpath, created_at, updated_at) VALUES (1, 1, 'library:1', 'ready', %s, 'c', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"thumbnail_cleanup_jobs", "status", "pending", `INSERT INTO thumbnail_cleanup_jobs (group_key, status, execute_after, created_at, updated_at) VALUES ('library:1', %s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"wal_maintenance_jobs", "requested_mode", "truncate", `INSERT INTO wal_maintenance_jobs (requested_mode, execute_after, created_at, updated_at) VALUES (%s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"wal_maintenance_jobs", "status", "retryable", `INSERT INTO wal_maintenance_jobs (status, execute_after, created_at, updated_at) VALUES (%s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"scan_requests", "kind", "hash", `INSERT INTO scan_requests (kind, library_id, priority, created_at, updated_at) VALUES (%s, 1, 'high', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"scan_requests", "priority", "normal", `INSERT INTO scan_requests (kind, library_id, priority, created_at, updated_at) VALUES ('scan', 1, %s, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`},
	{"file_metadata", "source", "folder", `INSERT INTO file_metadata (file_id, source, updated_at) VALUES ((SELECT max(id) FROM library_files), %s, '2026-01-01 00:00:00.000')`},
	{"file_metadata", "manga", "yes_rtl", `INSERT INTO file_metadata (file_id, source, manga, updated_at) VALUES ((SELECT max(id) FROM library_files), 'comicinfo', %s, '2026-01-01 00:00:00.000')
		ON CONFLICT (file_id) DO UPDATE SET manga = excluded.manga`},
}

func setup(t *testing.T) *store.Store {
	t.Helper()
	return testfactory.Control(t)
}

func mustExec(t *testing.T, s *store.Store, q string, args ...any) {
	t.Helper()
	storetest.MustExec(t, s, q, args...)
}

func TestEnumChecks(t *testing.T) {
	s := setup(t)
	for _, c := range enumCases {
		t.Run(c.table+"."+c.column, func(t *testing.T) {
			ctx := context.Background()
			if strings.HasPrefix(c.table, "scan_requests") {
				mustExec(t, s, "DELETE FROM scan_requests")
			}
			if _, err := storetest.Exec(ctx, s, strings.Replace(c.insert, "%s", "'"+c.legal+"'", 1)); err != nil {
				t.Fatalf("legal value %q refused: %v", c.legal, err)
			}
			bad := []string{strings.ToUpper(c.legal), strings.ToUpper(c.legal[:1]) + c.legal[1:], "bogus", ""}
			for _, v := range bad {
				_, err := storetest.Exec(ctx, s, strings.Replace(c.insert, "%s", "'"+v+"'", 1))
				if !store.IsConstraint(err) {
					t.Errorf("value %q: want constraint error, got %v", v, err)
				}
			}
		})
	}
}

func TestNotNullColumns(t *testing.T) {
	s := setup(t)
	for _, q := range []string{
		`INSERT INTO jobs (kind, status, created_at, updated_at) VALUES (NULL, 'completed', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('scan', NULL, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('delete', 'completed', NULL, '2026-01-01 00:00:00.000')`,
		`INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, created_at, updated_at) VALUES (1, NULL, 1, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, created_at, updated_at) VALUES (1, 'a', NULL, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at) VALUES (1, 1, NULL, 'c', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO wal_maintenance_jobs (execute_after, created_at, updated_at) VALUES (NULL, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		`INSERT INTO io_rate_limits (bucket_key, next_available_at_ms, updated_at) VALUES ('b', NULL, '2026-01-01 00:00:00.000')`,
	} {
		if _, err := storetest.Exec(context.Background(), s, q); !store.IsConstraint(err) {
			t.Errorf("%s: want constraint error, got %v", q, err)
		}
	}
	short := `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, content_hash, created_at, updated_at)
		VALUES (1, 'short', 1, 1, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`
	if _, err := storetest.Exec(context.Background(), s, short, []byte{0}); !store.IsConstraint(err) {
		t.Errorf("a one-byte digest: want constraint error, got %v", err)
	}
}

// TestSingleActiveIndex races two connections of two stores (as two
// processes would) inserting scan/hash jobs: exactly one insert wins.
func TestSingleActiveIndex(t *testing.T) {
	control, _, path := storetest.MustOpenDB(t)
	other := storetest.MustOpen(t, path, store.RoleControl, nil)
	testfactory.Library(t, control, &testfactory.LibraryOpts{ID: 1})

	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, uniqueFails := 0, 0
	for i := 0; i < 40; i++ {
		s, kind := control, "scan"
		if i%2 == 1 {
			s, kind = other, "hash"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := storetest.Exec(context.Background(), s,
				`INSERT INTO jobs (kind, status, library_id, created_at, updated_at) VALUES (?, 'pending', 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`, kind)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case store.IsUnique(err):
				uniqueFails++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || uniqueFails != 39 {
		t.Fatalf("wins=%d unique failures=%d", wins, uniqueFails)
	}
	// Other kinds and terminal rows are not limited.
	mustExec(t, control, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('delete', 'pending', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`)
	mustExec(t, control, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('scan', 'completed', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`)
	mustExec(t, control, `UPDATE jobs SET status = 'completed' WHERE status = 'pending' AND kind IN ('scan','hash')`)
	mustExec(t, control, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('hash', 'running', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`)
}

// TestPragmasOnEveryConnection holds several reader connections at once and
// checks each one got the DSN's pragmas.
func TestPragmasOnEveryConnection(t *testing.T) {
	storetest.SkipOnPostgres(t, "pragmas are SQLite's")
	control, worker, _ := storetest.MustOpenDB(t)
	for name, s := range map[string]*store.Store{"control": control, "worker": worker} {
		t.Run(name, func(t *testing.T) {
			got, err := s.ConnectionPragmas(context.Background(), 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 5 {
				t.Fatalf("checked %d connections", len(got))
			}
			for i, p := range got {
				if p.JournalMode != "wal" || p.ForeignKeys != 1 || p.BusyTimeoutMS != 10000 || p.Synchronous != 1 {
					t.Errorf("connection %d: %+v", i, p)
				}
			}
		})
	}
}

// TestReaderCache: ReaderCacheKiB sets every reader connection's page
// cache (workerd's readers) and leaves the writer's; without it the
// readers keep SQLite's default of 2,000 KiB.
func TestReaderCache(t *testing.T) {
	storetest.SkipOnPostgres(t, "page caches are SQLite's")
	path := storetest.MustMigrate(t)
	for _, c := range []struct{ kib, want int }{{0, -2000}, {512, -512}} {
		s, err := store.Open(context.Background(), store.Config{Path: path, Role: store.RoleWorker, ReaderCacheKiB: c.kib})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.ConnectionPragmas(context.Background(), 3)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got[0].CacheSize != -16*1024 {
			t.Errorf("ReaderCacheKiB %d: writer cache_size %d, want %d", c.kib, got[0].CacheSize, -16*1024)
		}
		for i, p := range got[1:] {
			if p.CacheSize != c.want {
				t.Errorf("ReaderCacheKiB %d: reader %d cache_size %d, want %d", c.kib, i, p.CacheSize, c.want)
			}
		}
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Run("corrupt file is named and left alone", func(t *testing.T) {
		path := filepath.Join(dir, "corrupt.db")
		junk := []byte(strings.Repeat("this is not a database\n", 400))
		if err := os.WriteFile(path, junk, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := store.Open(ctx, store.Config{Path: path})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("open corrupt: %v", err)
		}
		if err := store.Migrate(ctx, path); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("migrate corrupt: %v", err)
		}
		after, _ := os.ReadFile(path)
		if string(after) != string(junk) {
			t.Fatal("corrupt file was modified")
		}
	})
	t.Run("missing file is not created without Create", func(t *testing.T) {
		path := filepath.Join(dir, "missing.db")
		if _, err := store.Open(ctx, store.Config{Path: path, Role: store.RoleWorker}); err == nil {
			t.Fatal("opened a missing database")
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("file created: %v", err)
		}
	})
}
