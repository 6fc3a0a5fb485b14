package deploy

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// apiClient talks to a running controld as an admin would.
type apiClient struct {
	base, token string
}

func (c apiClient) do(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	code, err := c.try(method, path, body, out)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// try is do for goroutines other than the test's: it returns its error.
func (c apiClient) try(method, path, body string, out any) (int, error) {
	req, err := http.NewRequest(method, c.base+"/api/v1"+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %v\n%s", method, path, err, raw)
		}
	}
	return resp.StatusCode, nil
}

// waitFor polls cond until it holds; the condition is the daemons' state
// read through the API, not elapsed time.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, limit, cond)
}

// scanThroughAPI generates a library under the library root, registers it
// and scans it through controld while workerd runs in its own process, and
// checks what a user would look at: files, series, covers and duplicates.
func scanThroughAPI(t *testing.T, addr, state, libraryRoot string) {
	t.Helper()
	dir := filepath.Join(libraryRoot, "comics")
	m, err := fixtures.Library(dir, fixtures.LibrarySpec{Files: 12, Broken: 1})
	if err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(dir, "copy.cbz")
	src := filepath.Join(dir, filepath.FromSlash(m.Files[0].Path))
	data, err := os.ReadFile(src)
	if err != nil || filepath.Ext(src) != ".cbz" {
		t.Fatalf("first sample file %s: %v", src, err)
	}
	if err := os.WriteFile(dup, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The same book repacked: its entries in reverse order, stored, not
	// deflated; no byte duplicate of anything, the same book by its pages.
	if err := os.WriteFile(filepath.Join(dir, "repack.cbz"), repack(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	token, err := os.ReadFile(filepath.Join(state, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	c := apiClient{base: "http://" + addr, token: strings.TrimSpace(string(token))}

	var lib struct{ ID int64 }
	if code := c.do(t, "POST", "/libraries", fmt.Sprintf(`{"name":"comics","path":%q}`, dir), &lib); code != 201 {
		t.Fatalf("create library: %d", code)
	}
	if code := c.do(t, "POST", "/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, lib.ID), nil); code != 201 {
		t.Fatalf("request scan: %d", code)
	}
	type summary struct {
		FileCount int `json:"file_count"`
		LastScan  *struct {
			Status string
			Counts map[string]int64
		} `json:"last_scan"`
	}
	var s summary
	waitFor(t, "scan succeeded", 60*time.Second, func() bool {
		s = summary{}
		c.do(t, "GET", fmt.Sprintf("/libraries/%d", lib.ID), "", &s)
		return s.LastScan != nil && s.LastScan.Status == "succeeded"
	})
	if want := len(m.Files) + 2; s.FileCount != want || s.LastScan.Counts["error_count"] != 1 {
		t.Fatalf("scan: %d files (want %d), counts %v", s.FileCount, want, s.LastScan.Counts)
	}

	var groups struct {
		Items []struct {
			FileCount int `json:"file_count"`
		}
	}
	waitFor(t, "hash job found the duplicate", 60*time.Second, func() bool {
		c.do(t, "GET", "/duplicates/groups", "", &groups)
		return len(groups.Items) == 1 && groups.Items[0].FileCount == 2
	})
	var books struct {
		Items []struct {
			Kind  string `json:"kind"`
			Books []struct {
				RelativePath string `json:"relative_path"`
			} `json:"books"`
		}
	}
	c.do(t, "GET", "/duplicates/books", "", &books)
	// The sample library repeats pages across containers too (a .cbr and
	// a .cb7 of one generated book), so other groups may be listed; the
	// book, its copy and its repack must be one of them.
	found := false
	for _, g := range books.Items {
		rels := map[string]bool{}
		for _, b := range g.Books {
			rels[b.RelativePath] = true
		}
		// The hash job's page-digest phase may or may not have run yet:
		// the groups are by index until it has, by digest after.
		if !slices.Contains([]string{"same_pages", "contains", "same_pages_by_index"}, g.Kind) || len(g.Books) < 2 {
			t.Fatalf("same-book group %+v", g)
		}
		found = found || g.Kind != "contains" && rels[m.Files[0].Path] && rels["copy.cbz"] && rels["repack.cbz"]
	}
	if !found {
		t.Fatalf("same-book groups %+v, want one holding %s, copy.cbz and repack.cbz", books.Items, m.Files[0].Path)
	}
	var metrics struct{ Ready, Pending, Running int }
	waitFor(t, "covers rendered", 60*time.Second, func() bool {
		c.do(t, "GET", "/thumbnails/metrics", "", &metrics)
		return metrics.Ready > 0 && metrics.Pending == 0 && metrics.Running == 0
	})
	if want := len(m.Files) + 1; metrics.Ready != want { // the broken file has no cover; the copy and the repack have one
		t.Errorf("covers ready: %d, want %d", metrics.Ready, want)
	}
	var files struct {
		Items []struct {
			Cover struct{ URL string } `json:"cover"`
		}
	}
	c.do(t, "GET", "/files?limit=1", "", &files)
	req, _ := http.NewRequest("GET", c.base+files.Items[0].Cover.URL, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Fatalf("cover %s: %d %s %s", files.Items[0].Cover.URL, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
	readThroughAPI(t, c, dir)
	rebuildCovers(t, c, state, lib.ID, len(m.Files)+1)
}

// repack writes the zip data's entries again in reverse order, stored.
func repack(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := len(zr.File) - 1; i >= 0; i-- {
		f := zr.File[i]
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store, Modified: f.Modified})
		if err == nil {
			_, err = io.Copy(w, rc)
		}
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rebuildCovers deletes the whole cover cache and checks that a rescan with
// scan.cover.regenerate_missing=1 renders every cover again (issue 7,
// "Rebuild").
func rebuildCovers(t *testing.T, c apiClient, state string, libraryID int64, want int) {
	t.Helper()
	covers := filepath.Join(state, "covers")
	if n := countCovers(t, covers); n != want {
		t.Fatalf("%d cover files before the rebuild, want %d", n, want)
	}
	if err := os.RemoveAll(covers); err != nil {
		t.Fatal(err)
	}
	if code := c.do(t, "PATCH", "/settings", `{"scan.cover.regenerate_missing":"1"}`, nil); code != 200 {
		t.Fatalf("patch settings: %d", code)
	}
	if code := c.do(t, "POST", "/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, libraryID), nil); code >= 300 {
		t.Fatalf("request rescan: %d", code)
	}
	waitFor(t, "cover cache rebuilt", 60*time.Second, func() bool { return countCovers(t, covers) == want })
}

func countCovers(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return n
}
