// Package web is the admin dashboard: static HTML, CSS and JavaScript
// embedded in controld and served at "/". It holds no data and has no
// private endpoints: the browser signs in with the admin token and calls
// the public /api/v1 routes like any other client, so the dashboard also
// proves that the API is enough to run Bindery.
//
// Strategy: the assets are read and gzip-compressed once, when Handler is
// built, so a request is a map lookup and one write. Every response carries
// a strong ETag (a hash of the content) and "Cache-Control: no-cache": the
// browser keeps its copy and revalidates with If-None-Match (a 304 on
// loopback costs nothing), so a new controld version is picked up at once
// without versioned file names or a build step.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	contentType string
	etag        string
	raw         []byte
	gz          []byte // nil when compression does not pay
}

// Handler serves the dashboard: index.html at "/" and "/index.html", the
// other assets at their paths under static/ (e.g. "/js/app.js"). Anything
// else is a plain 404. GET and HEAD only.
func Handler() http.Handler {
	assets, err := load(static)
	if err != nil {
		// The assets are compiled in: failing here is a build defect.
		panic(fmt.Sprintf("web: %v", err))
	}
	return &handler{assets: assets}
}

type handler struct {
	assets map[string]*asset
}

// load reads every file under static/ and precompresses the text ones.
func load(fsys fs.FS) (map[string]*asset, error) {
	sub, err := fs.Sub(fsys, "static")
	if err != nil {
		return nil, err
	}
	out := map[string]*asset{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		a, err := newAsset(p, raw)
		if err != nil {
			return err
		}
		out["/"+p] = a
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out["/index.html"] == nil {
		return nil, fmt.Errorf("static/index.html is missing")
	}
	return out, nil
}

func newAsset(name string, raw []byte) (*asset, error) {
	ct := contentType(name)
	sum := sha256.Sum256(raw)
	a := &asset{contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, raw: raw}
	if compressible(ct) && len(raw) > 256 {
		var b bytes.Buffer
		zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
		if err != nil {
			return nil, err
		}
		if _, err := zw.Write(raw); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		if b.Len() < len(raw) {
			a.gz = b.Bytes()
		}
	}
	return a, nil
}

// contentType maps an extension to its type; the table is explicit so the
// result does not depend on the host's /etc/mime.types.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".json", ".webmanifest":
		return "application/json"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func compressible(ct string) bool {
	return strings.HasPrefix(ct, "text/") || strings.HasPrefix(ct, "application/json") || ct == "image/svg+xml"
}

// csp allows only the dashboard's own scripts and styles, API calls to the
// same origin, and covers as blob: URLs (they are fetched with the bearer
// header, see js/ui.js).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "/" {
		p = "/index.html"
	}
	a, ok := h.assets[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("ETag", a.etag)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Vary", "Accept-Encoding")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if strings.HasPrefix(a.contentType, "text/html") {
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Frame-Options", "DENY")
	}
	if etagMatch(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.raw
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = a.gz
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// etagMatch implements If-None-Match's weak comparison over a list.
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding lists gzip with a non-zero
// quality.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
