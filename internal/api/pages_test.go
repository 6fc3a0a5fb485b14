package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/natsort"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// book inserts the row the scanner would write for the file (or folder
// book) at rel under the library, with its real format.
func (e *env) book(lib int64, dir, rel string, role protocol.FileRole) int64 {
	e.t.Helper()
	format := protocol.FormatFolder
	if role != protocol.RoleFolder {
		f, err := archive.Detect(filepath.Join(dir, rel))
		if err != nil {
			e.t.Fatalf("%s: %v", rel, err)
		}
		format = f
	} else {
		rel += "/"
	}
	now := e.now()
	id, err := storetest.InsertID(e.ctx, e.worker, `INSERT INTO library_files (library_id, relative_path, path_key, size_bytes, mtime_ns, format,
		role, needs_analysis, created_at, updated_at) VALUES (?, ?, ?, 1000, 1700000000000000000, ?, ?, 0, ?, ?) RETURNING id`,
		lib, rel, natsort.Key(rel), string(format), string(role), now, now)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// get sends a GET with the token and extra headers.
func (e *env) get(target string, hdr ...string) resp {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return serve(e.srv, req)
}

// pagesOf decodes GET /files/{id}/pages.
func (e *env) pagesOf(id int64) pageList {
	e.t.Helper()
	r := e.get(fmt.Sprintf("/api/v1/files/%d/pages", id))
	e.expect(r, 200, "")
	var l pageList
	r.decode(e.t, &l)
	return l
}

type pageList struct {
	Count int
	Items []struct {
		Number    int
		Name      string
		MediaType string `json:"media_type"`
		Width     *int
		Height    *int
		Wide      bool
		ErrorCode *string `json:"error_code"`
	}
}

// writeBook writes a generated book under the library folder.
func writeBook(t *testing.T, dir, name string, kind fixtures.Kind, b fixtures.Book) {
	t.Helper()
	if err := fixtures.WriteBook(filepath.Join(dir, name), kind, b); err != nil {
		t.Fatal(err)
	}
}

func TestPagesOfEveryKind(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	dir := filepath.Join(e.root, "comics")
	wide := fixtures.Book{Pages: 12, Page: fixtures.PageOptions{W: 120, H: 80}}
	for _, k := range []fixtures.Kind{fixtures.KindCBZ, fixtures.KindCBR4, fixtures.KindCBR5, fixtures.KindCB7} {
		name := "book-" + string(k) + k.Ext()
		writeBook(t, dir, name, k, wide)
		id := e.book(lib, dir, name, protocol.RoleBook)
		l := e.pagesOf(id)
		if l.Count != 12 || len(l.Items) != 12 {
			t.Fatalf("%s: %d pages, want 12", k, l.Count)
		}
		// Natural order: page 2 before page 10, as the cover picks.
		if l.Items[1].Name != "page 2.jpg" || l.Items[9].Name != "page 10.jpg" {
			t.Errorf("%s: order %q, %q", k, l.Items[1].Name, l.Items[9].Name)
		}
		p := l.Items[0]
		if p.Width == nil || *p.Width != 120 || *p.Height != 80 || !p.Wide || p.MediaType != "image/jpeg" {
			t.Errorf("%s: page 1 = %+v", k, p)
		}
		files, _ := wide.Files()
		for n := 12; n >= 1; n-- { // backwards: a solid decoder restarts
			r := e.get(fmt.Sprintf("/api/v1/files/%d/pages/%d", id, n))
			want := fileNamed(t, files, l.Items[n-1].Name)
			if r.Code != 200 || !bytes.Equal(r.Body, want) || r.Hdr.Get("Content-Type") != "image/jpeg" {
				t.Fatalf("%s page %d: %d %s, %d bytes", k, n, r.Code, r.Hdr.Get("Content-Type"), len(r.Body))
			}
		}
	}
}

func fileNamed(t *testing.T, files []fixtures.File, name string) []byte {
	t.Helper()
	for _, f := range files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no entry %q", name)
	return nil
}

func TestPageConditionalRangeWidth(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	dir := filepath.Join(e.root, "comics")
	writeBook(t, dir, "a.cbz", fixtures.KindCBZ, fixtures.Book{Pages: 2, Page: fixtures.PageOptions{W: 400, H: 600}})
	id := e.book(lib, dir, "a.cbz", protocol.RoleBook)
	url := fmt.Sprintf("/api/v1/files/%d/pages/1", id)
	full := e.get(url)
	e.expect(full, 200, "")
	etag := full.Hdr.Get("ETag")
	if etag == "" || full.Hdr.Get("Last-Modified") == "" || full.Hdr.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("headers %v", full.Hdr)
	}
	e.expect(e.get(url, "If-None-Match", etag), 304, "")
	e.expect(e.get(url, "If-None-Match", `"other", W/`+etag), 304, "")
	part := e.get(url, "Range", "bytes=10-19")
	if part.Code != 206 || !bytes.Equal(part.Body, full.Body[10:20]) {
		t.Fatalf("range: %d, %d bytes", part.Code, len(part.Body))
	}
	e.expect(e.get(url, "Range", fmt.Sprintf("bytes=%d-", len(full.Body)+10)), 416, "")

	small := e.get(url + "?width=100")
	e.expect(small, 200, "")
	w, h, err := jpegSize(small.Body)
	if err != nil || w != 100 || h != 150 || small.Hdr.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("width=100: %d×%d %v %s", w, h, err, small.Hdr.Get("Content-Type"))
	}
	if small.Hdr.Get("ETag") == etag {
		t.Error("a shrunk page has the full page's ETag")
	}
	cached := e.get(url + "?width=100")
	if !bytes.Equal(cached.Body, small.Body) || countFiles(t, filepath.Join(e.state, "pages")) != 1 {
		t.Errorf("the shrunk page was not served from the cache under <state>/pages")
	}
	e.expect(e.get(url+"?width=100", "If-None-Match", small.Hdr.Get("ETag")), 304, "")
	big := e.get(url + "?width=4000") // never enlarged: the page as it is
	if big.Code != 200 || !bytes.Equal(big.Body, full.Body) {
		t.Errorf("width=4000: %d, %d bytes, want the original %d", big.Code, len(big.Body), len(full.Body))
	}
}

// jpegSize reads a baseline JPEG's SOF marker.
func jpegSize(b []byte) (int, int, error) {
	for i := 2; i+9 < len(b); {
		if b[i] != 0xff {
			return 0, 0, fmt.Errorf("bad marker at %d", i)
		}
		m := b[i+1]
		l := int(b[i+2])<<8 | int(b[i+3])
		if m >= 0xc0 && m <= 0xc3 {
			return int(b[i+7])<<8 | int(b[i+8]), int(b[i+5])<<8 | int(b[i+6]), nil
		}
		i += 2 + l
	}
	return 0, 0, fmt.Errorf("no SOF")
}

func countFiles(t *testing.T, dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	return n
}
