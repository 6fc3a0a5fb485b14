package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/web"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// staticFiles lists the files under static/ as URL paths.
func staticFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, "/"+filepath.ToSlash(strings.TrimPrefix(p, "static/")))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHandler(t *testing.T) {
	h := web.Handler()

	t.Run("index at root with security headers", func(t *testing.T) {
		res := get(t, h, "GET", "/", nil)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET / = %d %q", res.StatusCode, res.Header.Get("Content-Type"))
		}
		if !bytes.Contains(body, []byte(`<script type="module" src="/js/app.js">`)) {
			t.Fatalf("index.html does not load the app:\n%s", body)
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "img-src 'self' blob:"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("headers: %v", res.Header)
		}
	})

	t.Run("content types", func(t *testing.T) {
		want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
			".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}
		for _, p := range staticFiles(t) {
			res := get(t, h, "GET", p, nil)
			if res.StatusCode != 200 {
				t.Errorf("GET %s = %d", p, res.StatusCode)
				continue
			}
			if ct := want[filepath.Ext(p)]; res.Header.Get("Content-Type") != ct {
				t.Errorf("GET %s: Content-Type %q, want %q", p, res.Header.Get("Content-Type"), ct)
			}
		}
	})

	t.Run("gzip when accepted, identical content", func(t *testing.T) {
		for _, p := range staticFiles(t) {
			plain := get(t, h, "GET", p, nil)
			raw, _ := io.ReadAll(plain.Body)
			if plain.Header.Get("Content-Encoding") != "" {
				t.Fatalf("%s gzipped without Accept-Encoding", p)
			}
			disk, err := os.ReadFile(filepath.Join("static", p))
			if err != nil || !bytes.Equal(raw, disk) {
				t.Fatalf("%s: served bytes differ from static%s (%v)", p, p, err)
			}
			gz := get(t, h, "GET", p, map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
			if gz.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("%s: Vary %q", p, gz.Header.Get("Vary"))
			}
			if gz.Header.Get("Content-Encoding") != "gzip" {
				if len(raw) > 1024 {
					t.Errorf("%s (%d bytes) not compressed", p, len(raw))
				}
				continue
			}
			zr, err := gzip.NewReader(gz.Body)
			if err != nil {
				t.Fatal(err)
			}
			unz, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(unz, raw) {
				t.Fatalf("%s: gunzipped body differs (%v)", p, err)
			}
			if q0 := get(t, h, "GET", p, map[string]string{"Accept-Encoding": "gzip;q=0"}); q0.Header.Get("Content-Encoding") != "" {
				t.Errorf("%s gzipped although gzip;q=0", p)
			}
		}
	})

	t.Run("etag revalidation", func(t *testing.T) {
		res := get(t, h, "GET", "/js/app.js", nil)
		etag := res.Header.Get("ETag")
		if !regexp.MustCompile(`^"[0-9a-f]{24}"$`).MatchString(etag) {
			t.Fatalf("ETag %q", etag)
		}
		for _, inm := range []string{etag, `W/` + etag, `"other", ` + etag} {
			if r := get(t, h, "GET", "/js/app.js", map[string]string{"If-None-Match": inm}); r.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match %s = %d, want 304", inm, r.StatusCode)
			}
		}
		if r := get(t, h, "GET", "/js/app.js", map[string]string{"If-None-Match": `"stale"`}); r.StatusCode != 200 {
			t.Errorf("stale ETag = %d, want 200", r.StatusCode)
		}
		if other := get(t, h, "GET", "/js/api.js", nil).Header.Get("ETag"); other == etag {
			t.Error("two files share an ETag")
		}
	})

	t.Run("head, unknown paths and methods", func(t *testing.T) {
		head := get(t, h, "HEAD", "/app.css", nil)
		if b, _ := io.ReadAll(head.Body); head.StatusCode != 200 || len(b) != 0 || head.Header.Get("Content-Length") == "" {
			t.Errorf("HEAD = %d, %d body bytes, length %q", head.StatusCode, len(b), head.Header.Get("Content-Length"))
		}
		for _, p := range []string{"/nope", "/static/index.html", "/js/", "/../web.go", "/api/v1/libraries", "/js/app.js/x"} {
			if r := get(t, h, "GET", p, nil); r.StatusCode != 404 {
				t.Errorf("GET %s = %d, want 404", p, r.StatusCode)
			}
		}
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			if r := get(t, h, m, "/", nil); r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s / = %d", m, r.StatusCode)
			}
		}
	})

	t.Run("every asset the pages reference is served", func(t *testing.T) {
		// index.html's src/href and every JS import must resolve, or the
		// browser shows a blank page.
		ref := regexp.MustCompile(`(?:src|href)="(/[^"]+)"|import\(?\s*(?:[\w{}\s,*]+from\s*)?'(\.{1,2}/[^']+)'`)
		for _, p := range staticFiles(t) {
			if ext := filepath.Ext(p); ext != ".html" && ext != ".js" {
				continue
			}
			src, _ := os.ReadFile(filepath.Join("static", p))
			for _, m := range ref.FindAllStringSubmatch(string(src), -1) {
				target := m[1]
				if target == "" {
					target = filepath.ToSlash(filepath.Join(filepath.Dir(p), m[2]))
				}
				if r := get(t, h, "GET", target, nil); r.StatusCode != 200 {
					t.Errorf("%s references %s: %d", p, target, r.StatusCode)
				}
			}
		}
	})

	t.Run("first load budget", func(t *testing.T) {
		// Everything the dashboard can load, gzipped, must stay far below
		// the 150 KB first-load budget (the browser test measures the real
		// transfer of the overview).
		total := 0
		for _, p := range staticFiles(t) {
			res := get(t, h, "GET", p, map[string]string{"Accept-Encoding": "gzip"})
			b, _ := io.ReadAll(res.Body)
			total += len(b)
		}
		t.Logf("all assets, gzip: %d bytes", total)
		if total > 150*1024 {
			t.Fatalf("assets are %d bytes gzipped, over the 150 KB budget", total)
		}
	})
}
