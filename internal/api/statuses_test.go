package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/api"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestDocumentedStatuses reaches the statuses docs/openapi.yaml lists that
// the feature tests do not: TestMain then proves every documented status is
// returned by its handler, and nothing else is.
func TestDocumentedStatuses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("a")
	f := e.file(lib, "a.cbz")

	t.Run("not found by id", func(t *testing.T) {
		e.t = t
		for path, code := range map[string]string{
			"/api/v1/jobs/99":         "job_not_found",
			"/api/v1/scans/99":        "scan_not_found",
			"/api/v1/scans/99/errors": "scan_not_found",
			"/api/v1/files/99":        "file_not_found",
			"/api/v1/series/99":       "series_not_found",
			"/api/v1/series/99/files": "series_not_found",
			"/api/v1/thumbnails/99":   "thumbnail_not_found",
			"/api/v1/libraries/99":    "library_not_found",
		} {
			e.expect(e.call("GET", path, ""), 404, code)
		}
		e.expect(e.call("PATCH", "/api/v1/libraries/99", `{"name":"b"}`), 404, "library_not_found")
		e.expect(e.call("POST", "/api/v1/files/99/cover/regenerate", ""), 404, "file_not_found")
	})

	t.Run("found by id", func(t *testing.T) {
		e.t = t
		e.expect(e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, lib)), 201, "")
		e.expect(e.call("GET", "/api/v1/jobs/1", ""), 200, "")
		now := e.now()
		if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO scan_sessions (job_id, library_id, started_at) VALUES (1, ?, ?)`, lib, now); err != nil {
			t.Fatal(err)
		}
		e.expect(e.call("GET", "/api/v1/scans/1", ""), 200, "")
		e.expect(e.call("GET", "/api/v1/scans/1/errors", ""), 200, "")
		if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO scan_errors (session_id, relative_path, error_code, message, created_at)
			VALUES (1, 'bad.cbz', 'archive_corrupt', 'zip: not a valid zip file', ?)`, now); err != nil {
			t.Fatal(err)
		}
		r := e.call("GET", "/api/v1/scans/1/errors", "")
		e.expect(r, 200, "")
		want := `"session_id":1,"relative_path":"bad.cbz","error_code":"archive_corrupt","message":"zip: not a valid zip file","created_at":"`
		if !strings.Contains(string(r.Body), want) {
			t.Fatalf("scan errors %s, want an item with %s", r.Body, want)
		}
	})

	t.Run("duplicate group files", func(t *testing.T) {
		e.t = t
		g := f + 1
		e.file(lib, "b.cbz")
		digest := strings.Repeat("ab", 32)
		e.exec(`UPDATE library_files SET hash_algorithm = 'blake3', content_hash = ?, hashed_at = ?, needs_hash = 0 WHERE id IN (?, ?)`,
			unhex(digest), e.now(), f, g)
		e.expect(e.call("GET", "/api/v1/duplicates/groups/blake3:"+digest+"/files", ""), 200, "")
	})

	t.Run("regenerate a cover: new, existing, queue full", func(t *testing.T) {
		e.t = t
		url := fmt.Sprintf("/api/v1/files/%d/cover/regenerate", f)
		e.expect(e.call("POST", url, ""), 202, "")
		e.expect(e.call("POST", url, ""), 200, "")
		e.expect(e.call("PATCH", "/api/v1/settings", `{"thumbnail.queue.capacity":1}`), 200, "")
		e.expect(e.call("POST", fmt.Sprintf("/api/v1/files/%d/cover/regenerate", f+1), ""), 429, "thumbnail_queue_full")
	})

	t.Run("checkpoint too soon", func(t *testing.T) {
		e.t = t
		storetest.SkipOnPostgres(t, "checkpoints are SQLite's (TestWALAndMaintenance sees PostgreSQL's 409)")
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{"mode":"truncate"}`), 202, "")
		e.exec(`UPDATE wal_maintenance_jobs SET status = 'completed', finished_at = ?`, e.now())
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{"mode":"truncate"}`), 429, "checkpoint_too_soon")
	})

	t.Run("no event feed", func(t *testing.T) {
		e.t = t
		srv, err := api.New(api.Config{Store: e.st, Token: testToken, CoverKey: testCoverKey, LibraryRoots: []string{e.root},
			StateDir: e.state, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		e.expect(serve(srv, req), 503, "unavailable")
	})

	t.Run("database gone", func(t *testing.T) {
		e.t = t
		control, _, _ := storetest.MustOpenDB(t)
		srv, err := api.New(api.Config{Store: control, Token: testToken, CoverKey: testCoverKey, LibraryRoots: []string{e.root},
			StateDir: e.state, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		control.Close()
		e.expect(serve(srv, httptest.NewRequest("GET", "/readyz", nil)), 503, "unavailable")
	})
}
