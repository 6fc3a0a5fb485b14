package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestLibraries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(e.root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.root, "plain.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(e.root, "inner")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inner, filepath.Join(e.root, "alias")); err != nil {
		t.Fatal(err)
	}
	t.Run("path validation", func(t *testing.T) {
		e.t = t
		cases := map[string]string{
			e.root + "/../" + filepath.Base(outside): "path_outside_library_root",
			e.root + "/inner/../../":                 "path_outside_library_root",
			"/etc":                                   "path_outside_library_root",
			"~":                                      "path_outside_library_root",
			"~/comics":                               "path_outside_library_root",
			"libraries/inner":                        "path_outside_library_root",
			"":                                       "path_outside_library_root",
			e.root + "/escape":                       "path_outside_library_root",
			e.root + "/escape/sub":                   "path_not_found",
			e.root + "2":                             "path_outside_library_root",
			e.root + "/missing":                      "path_not_found",
			e.root + "/plain.txt":                    "path_not_directory",
			e.root + "/%2e%2e":                       "path_not_found",
		}
		for p, code := range cases {
			e.unchanged(func() {
				e.expect(e.call("POST", "/api/v1/libraries", fmt.Sprintf(`{"name":"x","path":%q}`, p)), 400, code)
			})
		}
	})
	var id int64
	t.Run("create stores the real path; same path twice is 409", func(t *testing.T) {
		e.t = t
		r := e.call("POST", "/api/v1/libraries", fmt.Sprintf(`{"name":"alias","path":%q,"scan_interval_minutes":60}`, e.root+"/alias/"))
		e.expect(r, 201, "")
		var l struct {
			ID                  int64
			Path                string
			ScanIntervalMinutes int64 `json:"scan_interval_minutes"`
		}
		r.decode(t, &l)
		realInner, _ := filepath.EvalSymlinks(inner)
		if l.Path != realInner || l.ScanIntervalMinutes != 60 {
			t.Fatalf("library %+v, want path %s", l, realInner)
		}
		id = l.ID
		e.unchanged(func() {
			e.expect(e.call("POST", "/api/v1/libraries", fmt.Sprintf(`{"name":"again","path":%q}`, inner)), 409, "library_exists")
		})
	})
	t.Run("get with counts, patch, list", func(t *testing.T) {
		e.t = t
		e.file(id, "a.cbz")
		f2 := e.file(id, "b.cbz")
		e.exec(`UPDATE library_files SET is_missing = 1 WHERE id = ?`, f2)
		var l struct {
			FileCount    int64  `json:"file_count"`
			MissingCount int64  `json:"missing_count"`
			CreatedAt    string `json:"created_at"`
		}
		e.call("GET", fmt.Sprintf("/api/v1/libraries/%d", id), "").decode(t, &l)
		if l.FileCount != 2 || l.MissingCount != 1 || !strings.HasSuffix(l.CreatedAt, "Z") || !strings.Contains(l.CreatedAt, "T") {
			t.Fatalf("library = %+v", l)
		}
		e.expect(e.call("PATCH", fmt.Sprintf("/api/v1/libraries/%d", id), `{"name":"renamed"}`), 200, "")
		var page struct {
			Items []struct{ Name string }
		}
		e.call("GET", "/api/v1/libraries", "").decode(t, &page)
		if len(page.Items) != 1 || page.Items[0].Name != "renamed" {
			t.Fatalf("list = %+v", page)
		}
		e.expect(e.call("GET", "/api/v1/libraries/999", ""), 404, "library_not_found")
	})
	t.Run("delete refuses while a scan is active, then removes rows and schedules cover cleanup", func(t *testing.T) {
		e.t = t
		e.expect(e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, id)), 201, "")
		e.unchanged(func() { e.expect(e.call("DELETE", fmt.Sprintf("/api/v1/libraries/%d", id), ""), 409, "library_busy") })
		e.exec(`UPDATE jobs SET status = 'completed'`)
		e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, created_at, updated_at)
			VALUES (1, ?, ?, 'ready', 'covers/001/1.webp', ?, ?)`, id, fmt.Sprintf("library:%d", id), e.now(), e.now())
		e.expect(e.call("DELETE", fmt.Sprintf("/api/v1/libraries/%d", id), ""), 204, "")
		if n, _ := storetest.QueryInt(e.ctx, e.st, `SELECT count(*) FROM library_files`); n != 0 {
			t.Fatalf("files left: %d", n)
		}
		if n, _ := storetest.QueryInt(e.ctx, e.st, `SELECT count(*) FROM thumbnail_cleanup_jobs WHERE group_key = ?`, fmt.Sprintf("library:%d", id)); n != 1 {
			t.Fatalf("cleanup rows: %d", n)
		}
		if _, err := os.Stat(inner); err != nil {
			t.Fatalf("library folder touched: %v", err)
		}
		e.expect(e.call("DELETE", fmt.Sprintf("/api/v1/libraries/%d", id), ""), 404, "library_not_found")
	})
}

func TestJobs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.library("a"), e.library("b")
	t.Run("201 new, 200 same, 202 queued, 200 queued again", func(t *testing.T) {
		e.t = t
		e.expect(e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, a)), 201, "")
		e.expect(e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d,"priority":"normal"}`, a)), 200, "")
		r := e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d,"priority":"normal"}`, b))
		e.expect(r, 202, "")
		var q struct {
			Queued struct {
				ID       int64
				Position int
				Priority string
			}
		}
		r.decode(t, &q)
		if q.Queued.Position != 1 || q.Queued.Priority != "normal" {
			t.Fatalf("queued = %+v", q)
		}
		first := q.Queued.ID
		r = e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, b))
		e.expect(r, 200, "")
		r.decode(t, &q)
		if q.Queued.Priority != "high" || q.Queued.ID != first {
			t.Fatalf("high request did not upgrade the entry: %+v", q)
		}
		var one struct {
			ID       int64
			Position int
			Priority string
		}
		r = e.call("GET", fmt.Sprintf("/api/v1/queue/%d", first), "")
		e.expect(r, 200, "")
		r.decode(t, &one)
		if one.ID != first || one.Position != 1 || one.Priority != "high" {
			t.Fatalf("GET /queue/%d = %+v", first, one)
		}
		var list struct{ Items []struct{ ID int64 } }
		e.call("GET", "/api/v1/queue", "").decode(t, &list)
		if len(list.Items) != 1 {
			t.Fatalf("queue = %+v", list)
		}
		e.expect(e.call("DELETE", fmt.Sprintf("/api/v1/queue/%d", q.Queued.ID), ""), 204, "")
		e.expect(e.call("DELETE", fmt.Sprintf("/api/v1/queue/%d", q.Queued.ID), ""), 404, "")
		e.expect(e.call("GET", fmt.Sprintf("/api/v1/queue/%d", q.Queued.ID), ""), 404, "")
	})
	t.Run("cancel pending, running, terminal", func(t *testing.T) {
		e.t = t
		var j struct {
			Status          string
			CancelRequested bool `json:"cancel_requested"`
		}
		e.call("POST", "/api/v1/jobs/1/cancel", "").decode(t, &j)
		if j.Status != "cancelled" {
			t.Fatalf("pending cancel: %+v", j)
		}
		e.exec(`INSERT INTO jobs (kind, status, worker_id, lease_expires_at, created_at, updated_at)
			VALUES ('hash','running','w1','2999-01-01 00:00:00.000',?,?)`, e.now(), e.now())
		e.call("POST", "/api/v1/jobs/2/cancel", "").decode(t, &j)
		if j.Status != "running" || !j.CancelRequested {
			t.Fatalf("running cancel: %+v", j)
		}
		e.unchanged(func() { e.expect(e.call("POST", "/api/v1/jobs/1/cancel", ""), 409, "job_terminal") })
	})
	t.Run("pages have no gaps or duplicates with equal timestamps", func(t *testing.T) {
		e.t = t
		for i := range 45 {
			ts := protocol.FormatTime(time.Date(2025, 1, 1, 0, 0, i/10, 0, time.UTC))
			e.exec(`INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('delete','completed',?,?)`, ts, ts)
		}
		seen := map[int64]bool{}
		cursor := ""
		for range 20 {
			var p struct {
				Items []struct {
					ID        int64
					CreatedAt string `json:"created_at"`
				}
				NextCursor *string `json:"next_cursor"`
			}
			target := "/api/v1/jobs?kind=delete&limit=7"
			if cursor != "" {
				target += "&cursor=" + cursor
			}
			r := e.call("GET", target, "")
			e.expect(r, 200, "")
			r.decode(t, &p)
			for _, it := range p.Items {
				if seen[it.ID] {
					t.Fatalf("job %d twice", it.ID)
				}
				seen[it.ID] = true
			}
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
		}
		if len(seen) != 45 {
			t.Fatalf("saw %d of 45 jobs", len(seen))
		}
	})
}

// TestCover serves a cover from the cache with versioned caching, and
// refuses rows that point outside <state>/covers.
func TestCover(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("a")
	f := e.file(lib, "a.cbz")
	url := fmt.Sprintf("/api/v1/files/%d/cover", f)
	e.expect(e.call("GET", url, ""), 404, "cover_not_ready")
	e.expect(e.call("GET", "/api/v1/files/999/cover", ""), 404, "file_not_found")
	rel := fmt.Sprintf("covers/%03d/%d.webp", f%256, f)
	img := []byte("RIFF\x00\x00\x00\x00WEBPVP8 fake image bytes")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(e.state, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.state, rel), img, 0o644); err != nil {
		t.Fatal(err)
	}
	e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, created_at, updated_at)
		VALUES (?, ?, 'library:1', 'ready', 'webp', ?, ?, ?)`, f, lib, rel, e.now(), e.now())
	e.exec(`UPDATE library_files SET cover_updated_at = 1767000000 WHERE id = ?`, f)

	var fj struct {
		Cover struct {
			Status string
			URL    *string
		}
	}
	e.call("GET", fmt.Sprintf("/api/v1/files/%d", f), "").decode(t, &fj)
	if fj.Cover.Status != "ready" || fj.Cover.URL == nil || !strings.HasPrefix(*fj.Cover.URL, url+"?v=1767000000&exp=") ||
		!strings.Contains(*fj.Cover.URL, "&sig=") {
		t.Fatalf("cover = %+v", fj.Cover)
	}
	r := e.call("GET", *fj.Cover.URL, "")
	if r.Code != 200 || string(r.Body) != string(img) || r.Hdr.Get("Content-Type") != "image/webp" ||
		r.Hdr.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Hdr.Get("ETag") == "" {
		t.Fatalf("cover: %d %v", r.Code, r.Hdr)
	}
	for _, stale := range []string{url, url + "?v=1", url + "?v=t1"} {
		if r := e.call("GET", stale, ""); r.Code != 200 || r.Hdr.Get("Cache-Control") != "no-cache" {
			t.Fatalf("%s: %d %v", stale, r.Code, r.Hdr)
		}
	}
	req := func(etag string) int {
		rq, _ := http.NewRequest("GET", *fj.Cover.URL, nil)
		rq.Header.Set("Authorization", "Bearer "+testToken)
		rq.Header.Set("If-None-Match", etag)
		return serve(e.srv, rq).Code
	}
	if code := req(r.Hdr.Get("ETag")); code != 304 {
		t.Fatalf("If-None-Match: %d", code)
	}
	t.Run("signed URLs need no token, and only what they sign", func(t *testing.T) {
		e.t = t
		if r := e.callAuth("GET", *fj.Cover.URL, "", ""); r.Code != 200 || string(r.Body) != string(img) {
			t.Fatalf("signed URL without a token: %d %s", r.Code, r.Body)
		}
		e.expect(e.callAuth("GET", url+"?v=1767000000", "", ""), 401, "unauthorized")
		signed, _ := neturl.Parse(*fj.Cover.URL)
		q := signed.Query()
		exp, _ := strconv.ParseInt(q.Get("exp"), 10, 64)
		if d := time.Until(time.Unix(exp, 0)); d < 7*24*time.Hour || d > 8*24*time.Hour {
			t.Fatalf("expiry in %v, want 7 to 8 days", d)
		}
		sign := func(id int64, v string, exp int64) string {
			m := hmac.New(sha256.New, testCoverKey)
			fmt.Fprintf(m, "cover\x00%d\x00%s\x00%d", id, v, exp)
			return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
		}
		if got := sign(f, "1767000000", exp); got != q.Get("sig") {
			t.Fatalf("signature %s, want HMAC-SHA256 %s", q.Get("sig"), got)
		}
		past := time.Now().Add(-time.Minute).Unix()
		for _, c := range []struct{ target, code string }{
			{fmt.Sprintf("%s?v=1767000000&exp=%d&sig=%s", url, exp, sign(f, "1767000000", exp+1)), "bad_signature"},
			{fmt.Sprintf("/api/v1/files/%d/cover?v=1767000000&exp=%d&sig=%s", f+1, exp, q.Get("sig")), "bad_signature"},
			{fmt.Sprintf("%s?v=1&exp=%d&sig=%s", url, exp, q.Get("sig")), "bad_signature"},
			{fmt.Sprintf("%s?v=1767000000&exp=%d&sig=%s", url, exp+1, q.Get("sig")), "bad_signature"},
			{fmt.Sprintf("%s?v=1767000000&exp=abc&sig=%s", url, q.Get("sig")), "bad_signature"},
			{fmt.Sprintf("%s?v=1767000000&exp=%d&sig=%%21%%21", url, exp), "bad_signature"},
			{fmt.Sprintf("%s?v=1767000000&exp=%d&sig=%s", url, past, sign(f, "1767000000", past)), "url_expired"},
		} {
			e.expect(e.callAuth("GET", c.target, "", ""), 403, c.code)
		}
		// A bad signature is refused even with the token: a signed URL is
		// checked as signed.
		e.expect(e.call("GET", fmt.Sprintf("%s?v=1&exp=%d&sig=%s", url, exp, q.Get("sig")), ""), 403, "bad_signature")
	})
	t.Run("rows pointing outside the cache are never served", func(t *testing.T) {
		e.t = t
		if err := os.WriteFile(filepath.Join(e.state, "bindery.secret"), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(t.TempDir(), "x.webp")
		_ = os.WriteFile(outside, []byte("secret"), 0o644)
		_ = os.Symlink(outside, filepath.Join(e.state, "covers", "link.webp"))
		for _, bad := range []string{"covers/../bindery.secret", "bindery.secret", "/etc/passwd", "covers/link.webp", "covers/000"} {
			e.exec(`UPDATE thumbnails SET output_relpath = ?`, bad)
			r := e.call("GET", url, "")
			if r.Code != 404 || strings.Contains(string(r.Body), "secret") || r.errCode() != "cover_not_ready" {
				t.Fatalf("%s: %d %s", bad, r.Code, r.Body)
			}
		}
	})
}

// TestThumbnailAdmissionRace: 50 concurrent clients ask for covers of 50
// files with capacity 10: exactly 10 rows are admitted, the rest get 429.
func TestThumbnailAdmissionRace(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("a")
	var files []int64
	for i := range 50 {
		files = append(files, e.file(lib, fmt.Sprintf("f%02d.cbz", i)))
	}
	e.expect(e.call("PATCH", "/api/v1/settings", `{"thumbnail.queue.capacity":10}`), 200, "")
	codes := make([]int, len(files))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := e.call("POST", "/api/v1/thumbnails", fmt.Sprintf(`{"file_id":%d}`, f))
			codes[i] = r.Code
			if r.Code == 429 && r.errCode() != "thumbnail_queue_full" {
				t.Errorf("429 code %s", r.errCode())
			}
		}()
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[202] != 10 || count[429] != 40 {
		t.Fatalf("statuses = %v, want 10×202 and 40×429", count)
	}
	if n, _ := storetest.QueryInt(e.ctx, e.st, `SELECT count(*) FROM thumbnails WHERE status = 'pending'`); n != 10 {
		t.Fatalf("pending rows = %d", n)
	}
	t.Run("existing row is 200, unknown file 404, metrics count", func(t *testing.T) {
		e.t = t
		var admitted int64
		admitted, _ = storetest.QueryInt(e.ctx, e.st, `SELECT file_id FROM thumbnails LIMIT 1`)
		e.expect(e.call("POST", "/api/v1/thumbnails", fmt.Sprintf(`{"file_id":%d}`, admitted)), 200, "")
		e.expect(e.call("POST", "/api/v1/thumbnails", `{"file_id":9999}`), 404, "file_not_found")
		var m struct{ Pending int64 }
		e.call("GET", "/api/v1/thumbnails/metrics", "").decode(t, &m)
		if m.Pending != 10 {
			t.Fatalf("metrics = %+v", m)
		}
		// Ids are not dense on PostgreSQL, whose sequences keep no gaps
		// closed (an admission retried after a serialization failure).
		first, _ := storetest.QueryInt(e.ctx, e.st, `SELECT min(id) FROM thumbnails`)
		e.expect(e.call("GET", fmt.Sprintf("/api/v1/thumbnails/%d", first), ""), 200, "")
	})
}

func TestSettings(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var list struct {
		Items []struct {
			Key, Value, Default, Description string
		}
	}
	e.call("GET", "/api/v1/settings", "").decode(t, &list)
	keys := map[string]bool{}
	for _, it := range list.Items {
		keys[it.Key] = true
		if it.Description == "" || it.Value != it.Default {
			t.Fatalf("setting %+v", it)
		}
	}
	for _, k := range []string{"scan.max_workers", "scan.hash.mode", "hash.algorithm", "scan.cancel_check.interval_ms",
		"scan.cover.mode", "scan.cover.regenerate_missing", "scan.cover.width", "scan.cover.target_kb",
		"scan.cover.quality_start", "scan.cover.quality_min", "scan.cover.quality_step", "scan.cover.format",
		"cover.cache.shard_count", "thumbnail.queue.capacity", "jobs.max_attempts", "jobs.retention_hours",
		"wal.checkpoint.interval_minutes"} {
		if !keys[k] {
			t.Errorf("setting %s missing", k)
		}
	}
	e.unchanged(func() {
		e.expect(e.call("PATCH", "/api/v1/settings", `{"scan.max_workers":4,"scan.cover.width":"abc"}`), 400, "invalid_setting_value")
	})
	e.expect(e.call("PATCH", "/api/v1/settings", `{"scan.max_workers":4,"scan.cover.format":"jpeg"}`), 200, "")
	var one struct{ Value string }
	e.call("GET", "/api/v1/settings/scan.max_workers", "").decode(t, &one)
	if one.Value != "4" {
		t.Fatalf("scan.max_workers = %q", one.Value)
	}
}

// TestWALAndMaintenance covers checkpoint admission and stale recovery.
func TestWALAndMaintenance(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.expect(e.call("GET", "/api/v1/maintenance/wal-checkpoint/latest", ""), 404, "checkpoint_not_found")
	if storetest.Postgres() {
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{}`), 409, "checkpoint_not_applicable")
	} else {
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{}`), 202, "")
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{"mode":"truncate"}`), 200, "")
		e.expect(e.call("GET", "/api/v1/maintenance/wal-checkpoint/latest", ""), 200, "")
	}
	e.exec(`INSERT INTO jobs (kind, status, worker_id, lease_expires_at, created_at, updated_at)
		VALUES ('scan','running','dead','2000-01-01 00:00:00.000',?,?)`, e.now(), e.now())
	var n struct{ Jobs, Total int64 }
	r := e.call("POST", "/api/v1/maintenance/recover-stale", "")
	e.expect(r, 200, "")
	r.decode(t, &n)
	if n.Jobs != 1 || n.Total != 1 {
		t.Fatalf("recovered %+v", n)
	}
	e.expect(e.call("POST", "/api/v1/maintenance/thumbnail-cleanup", `{"group_key":"library:1","execute_after":"2030-01-01T00:00:00Z"}`), 202, "")
	e.expect(e.call("GET", "/api/v1/workers", ""), 200, "")
	e.expect(e.call("GET", "/healthz", ""), 200, "")
	e.expect(e.call("GET", "/readyz", ""), 200, "")
	if r := e.callAuth("GET", "/metrics", "", ""); r.Code != 200 || !strings.Contains(string(r.Body), "bindery_http_requests_total") {
		t.Fatalf("metrics: %d", r.Code)
	}
}
