package api_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/api"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestBadInput: every malformed request gets its 4xx with the documented
// code and leaves the database exactly as it was.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("one")
	e.file(lib, "a.cbz")
	e.exec(`INSERT INTO jobs (kind, status, created_at, updated_at, finished_at) VALUES ('scan','completed',?,?,?)`, e.now(), e.now(), e.now())

	cases := []struct {
		name, method, target, body string
		status                     int
		code                       string
	}{
		{"malformed json", "POST", "/api/v1/libraries", `{"name":`, 400, "invalid_json"},
		{"not an object", "POST", "/api/v1/jobs", `[1,2]`, 400, "invalid_json"},
		{"trailing data", "POST", "/api/v1/jobs", `{"kind":"scan","library_id":1} {}`, 400, "invalid_json"},
		{"empty body", "POST", "/api/v1/thumbnails", ``, 400, "invalid_json"},
		{"unknown field", "POST", "/api/v1/jobs", `{"kind":"scan","library_id":1,"force":true}`, 400, "unknown_field"},
		{"unknown field in patch", "PATCH", "/api/v1/libraries/1", `{"path":"/etc"}`, 400, "unknown_field"},
		{"wrong type", "POST", "/api/v1/jobs", `{"kind":"scan","library_id":"1"}`, 400, "invalid_field"},
		{"uppercase kind", "POST", "/api/v1/jobs", `{"kind":"SCAN","library_id":1}`, 400, "invalid_field"},
		{"uppercase priority", "POST", "/api/v1/jobs", `{"kind":"scan","library_id":1,"priority":"HIGH"}`, 400, "invalid_field"},
		{"kind not requestable", "POST", "/api/v1/jobs", `{"kind":"delete"}`, 400, "invalid_field"},
		{"scan without library", "POST", "/api/v1/jobs", `{"kind":"scan"}`, 400, "invalid_field"},
		{"unknown library", "POST", "/api/v1/jobs", `{"kind":"scan","library_id":99}`, 404, "library_not_found"},
		{"uppercase status filter", "GET", "/api/v1/jobs?status=PENDING", ``, 400, "invalid_parameter"},
		{"uppercase format filter", "GET", "/api/v1/files?format=ZIP", ``, 400, "invalid_parameter"},
		{"uppercase checkpoint mode", "POST", "/api/v1/maintenance/wal-checkpoint", `{"mode":"PASSIVE"}`, 400, "invalid_field"},
		{"bad checkpoint mode", "POST", "/api/v1/maintenance/wal-checkpoint", `{"mode":"full"}`, 400, "invalid_field"},
		{"uppercase thumbnail format", "POST", "/api/v1/thumbnails", `{"file_id":1,"format":"WEBP"}`, 400, "invalid_field"},
		{"cancel terminal job", "POST", "/api/v1/jobs/1/cancel", ``, 409, "job_terminal"},
		{"cancel unknown job", "POST", "/api/v1/jobs/77/cancel", ``, 404, "job_not_found"},
		{"non-numeric id", "GET", "/api/v1/jobs/abc", ``, 400, "invalid_parameter"},
		{"negative id", "GET", "/api/v1/files/-1", ``, 400, "invalid_parameter"},
		{"huge id", "GET", "/api/v1/files/99999999999999999999", ``, 400, "invalid_parameter"},
		{"bad group key algorithm", "GET", "/api/v1/duplicates/groups/md5:" + strings.Repeat("a", 32) + "/files", ``, 400, "invalid_group_key"},
		{"bad group key length", "GET", "/api/v1/duplicates/groups/sha256:abcd/files", ``, 400, "invalid_group_key"},
		{"uppercase group key hex", "GET", "/api/v1/duplicates/groups/sha256:" + strings.Repeat("A", 64) + "/files", ``, 400, "invalid_group_key"},
		{"bad cleanup key", "POST", "/api/v1/maintenance/thumbnail-cleanup", `{"group_key":"library:x"}`, 400, "invalid_group_key"},
		{"bad execute_after", "POST", "/api/v1/maintenance/thumbnail-cleanup", `{"group_key":"library:1","execute_after":"tomorrow"}`, 400, "invalid_field"},
		{"unknown setting", "PATCH", "/api/v1/settings", `{"scan.max_workers":2,"no.such":1}`, 400, "unknown_setting"},
		{"bad setting value", "PATCH", "/api/v1/settings", `{"scan.max_workers":2,"hash.algorithm":"md5"}`, 400, "invalid_setting_value"},
		{"setting value object", "PATCH", "/api/v1/settings", `{"scan.max_workers":{"a":1}}`, 400, "invalid_setting_value"},
		{"setting value float", "PATCH", "/api/v1/settings", `{"scan.max_workers":1.5}`, 400, "invalid_setting_value"},
		{"unknown setting get", "GET", "/api/v1/settings/no.such", ``, 404, "setting_not_found"},
		{"options on action route", "POST", "/api/v1/maintenance/recover-stale", `{"all":true}`, 400, "unknown_field"},
		{"bad library interval", "PATCH", "/api/v1/libraries/1", `{"scan_interval_minutes":-5}`, 400, "invalid_field"},
		{"empty library name", "PATCH", "/api/v1/libraries/1", `{"name":"  "}`, 400, "invalid_field"},
		{"unknown library media", "PATCH", "/api/v1/libraries/1", `{"media":"video"}`, 400, "invalid_field"},
		{"uppercase library media", "PATCH", "/api/v1/libraries/1", `{"media":"COMICS"}`, 400, "invalid_field"},
		{"library media not a string", "PATCH", "/api/v1/libraries/1", `{"media":1}`, 400, "invalid_field"},
		{"bad missing filter", "GET", "/api/v1/files?missing=maybe", ``, 400, "invalid_parameter"},
		{"bad library filter", "GET", "/api/v1/files?library_id=1%3BDROP", ``, 400, "invalid_parameter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.unchanged(func() { e.expect(e.call(c.method, c.target, c.body), c.status, c.code) })
		})
	}

	t.Run("body over 1 MiB", func(t *testing.T) {
		e.t = t
		big := `{"name":"` + strings.Repeat("x", 1<<20) + `","path":"/x"}`
		e.unchanged(func() { e.expect(e.call("POST", "/api/v1/libraries", big), 413, "body_too_large") })
		e.unchanged(func() { e.expect(e.call("PATCH", "/api/v1/settings", big), 413, "body_too_large") })
	})

	t.Run("limits", func(t *testing.T) {
		e.t = t
		for _, route := range []string{"/api/v1/jobs", "/api/v1/files", "/api/v1/libraries", "/api/v1/series",
			"/api/v1/scans", "/api/v1/duplicates/groups", "/api/v1/maintenance/wal-checkpoint"} {
			for _, l := range []string{"0", "-1", "201", "1000000", "99999999999999999999", "abc", "1.5", "%27"} {
				e.unchanged(func() { e.expect(e.call("GET", route+"?limit="+l, ""), 400, "invalid_limit") })
			}
			e.expect(e.call("GET", route+"?limit=200", ""), 200, "")
		}
	})

	t.Run("tampered cursors", func(t *testing.T) {
		e.t = t
		good := api.EncodeCursor(model.JobAnchor{CreatedAt: "2026-01-01 00:00:00.000", ID: 5})
		bad := []string{"x", "!!!!", good[:len(good)-2], good + "A", api.EncodeCursor(map[string]any{"id": 5}),
			api.EncodeCursor(model.JobAnchor{CreatedAt: "yesterday", ID: 5}),
			api.EncodeCursor(model.JobAnchor{CreatedAt: "2026-01-01 00:00:00.000", ID: -1}),
			api.EncodeCursor(map[string]any{"created_at": "2026-01-01 00:00:00.000", "id": 5, "extra": 1}),
			strings.Repeat("A", 5000), "' OR 1=1 --"}
		for _, cur := range bad {
			e.expect(e.call("GET", "/api/v1/jobs?cursor="+url.QueryEscape(cur), ""), 400, "invalid_cursor")
			e.expect(e.call("GET", "/api/v1/duplicates/groups?cursor="+url.QueryEscape(cur), ""), 400, "invalid_cursor")
			e.expect(e.call("GET", "/api/v1/files?sort=id&cursor="+url.QueryEscape(cur), ""), 400, "invalid_cursor")
			e.expect(e.call("GET", "/api/v1/libraries?cursor="+url.QueryEscape(cur), ""), 400, "invalid_cursor")
		}
		for _, cur := range []string{"x", good[:len(good)-2], api.EncodeCursor(map[string]any{"k": "a", "id": 0}),
			api.EncodeCursor(map[string]any{"s": "one", "k": "a", "id": 3}), strings.Repeat("A", 5000)} {
			e.expect(e.call("GET", "/api/v1/files?cursor="+url.QueryEscape(cur), ""), 400, "invalid_cursor")
		}
		e.expect(e.call("GET", "/api/v1/jobs?cursor="+good, ""), 200, "")
		e.expect(e.call("GET", "/api/v1/files?sort=id&cursor="+api.EncodeIDCursor(1), ""), 200, "")
		e.expect(e.call("GET", "/api/v1/files?cursor="+api.EncodeIDCursor(1), ""), 400, "invalid_cursor")
	})

	t.Run("SQL metacharacters in every string parameter", func(t *testing.T) {
		e.t = t
		evil := []string{`' OR '1'='1`, `"; DROP TABLE jobs; --`, `1); DELETE FROM libraries; --`, `%`, `_`, `\`, "\x00", `' UNION SELECT * FROM settings --`}
		for _, s := range evil {
			q := url.QueryEscape(s)
			p := url.PathEscape(s)
			e.unchanged(func() {
				for _, target := range []string{
					"/api/v1/jobs?kind=" + q, "/api/v1/jobs?status=" + q, "/api/v1/jobs?library_id=" + q,
					"/api/v1/files?format=" + q, "/api/v1/files?series_id=" + q, "/api/v1/series?library_id=" + q,
					"/api/v1/scans?library_id=" + q, "/api/v1/jobs?cursor=" + q,
					"/api/v1/duplicates/groups/" + p + "/files", "/api/v1/settings/" + p, "/api/v1/jobs/" + p,
				} {
					r := e.call("GET", target, "")
					if r.Code < 400 || r.Code >= 500 {
						t.Errorf("GET %s: %d %s", target, r.Code, r.Body)
					}
				}
				bodies := map[string]string{
					"/api/v1/jobs":                          fmt.Sprintf(`{"kind":%q,"library_id":1}`, s),
					"/api/v1/thumbnails":                    fmt.Sprintf(`{"file_id":1,"format":%q}`, s),
					"/api/v1/maintenance/wal-checkpoint":    fmt.Sprintf(`{"mode":%q}`, s),
					"/api/v1/maintenance/thumbnail-cleanup": fmt.Sprintf(`{"group_key":%q}`, s),
					"/api/v1/libraries":                     fmt.Sprintf(`{"name":"n","path":%q}`, s),
				}
				for target, body := range bodies {
					if r := e.call("POST", target, body); r.Code < 400 || r.Code >= 500 {
						t.Errorf("POST %s %s: %d %s", target, body, r.Code, r.Body)
					}
				}
				if r := e.call("PATCH", "/api/v1/settings", fmt.Sprintf(`{%q:1}`, s)); r.Code != 400 {
					t.Errorf("PATCH settings key %q: %d", s, r.Code)
				}
				if r := e.call("PATCH", "/api/v1/settings", fmt.Sprintf(`{"hash.algorithm":%q}`, s)); r.Code != 400 {
					t.Errorf("PATCH settings value %q: %d", s, r.Code)
				}
			})
			// A library name is free text: metacharacters are stored verbatim.
			r := e.call("PATCH", "/api/v1/libraries/1", fmt.Sprintf(`{"name":%q}`, "n"+strings.ReplaceAll(s, "\x00", "")))
			e.expect(r, 200, "")
			var l struct{ Name string }
			r.decode(t, &l)
			if l.Name != strings.TrimSpace("n"+strings.ReplaceAll(s, "\x00", "")) {
				t.Errorf("name stored as %q", l.Name)
			}
		}
		if n, _ := storetest.QueryInt(e.ctx, e.st, `SELECT count(*) FROM libraries`); n != 1 {
			t.Fatalf("libraries = %d", n)
		}
	})

	t.Run("dot segments in URL paths", func(t *testing.T) {
		e.t = t
		secret := filepath.Join(e.state, "bindery.secret")
		if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{
			"/api/v1/files/%2e%2e/cover", "/api/v1/%2e%2e/metrics", "/api/v1/files/1/%2E%2E/%2e%2e/jobs",
			"/api/v1/files/..%2f..%2fbindery.db/cover", "/api/v1/../healthz", "/api/v1/files/%2e/cover",
			"/api/v1/files/1%2fcover", "/healthz/%2e%2e/api/v1/jobs",
		} {
			for _, auth := range []string{"", "Bearer " + testToken} {
				e.unchanged(func() {
					r := e.callAuth("GET", target, "", auth)
					if r.Code != 400 || r.errCode() != "invalid_path" || strings.Contains(string(r.Body), "secret") {
						t.Errorf("GET %s: %d %s", target, r.Code, r.Body)
					}
				})
			}
		}
	})
}
