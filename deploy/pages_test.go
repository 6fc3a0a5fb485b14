package deploy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/archive"
)

// readThroughAPI reads every page of the first archive workerd scanned,
// and the file itself, from the running controld, and compares them with
// the archive's entries and the file on disk: controld serves pages
// read-only from the library the workers indexed.
func readThroughAPI(t *testing.T, c apiClient, dir string) {
	t.Helper()
	var files struct {
		Items []struct {
			ID           int64
			RelativePath string `json:"relative_path"`
			TotalPages   *int   `json:"total_pages"`
		}
	}
	c.do(t, "GET", "/files?format=zip&limit=1", "", &files)
	if len(files.Items) != 1 || files.Items[0].TotalPages == nil {
		t.Fatalf("no scanned zip book: %+v", files.Items)
	}
	f := files.Items[0]
	path := filepath.Join(dir, filepath.FromSlash(f.RelativePath))
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var list struct{ Count int }
	if code := c.do(t, "GET", fmt.Sprintf("/files/%d/pages", f.ID), "", &list); code != 200 || list.Count != *f.TotalPages {
		t.Fatalf("pages of %s: %d, %d pages, want %d", f.RelativePath, code, list.Count, *f.TotalPages)
	}
	for n, e := range a.Pages() {
		want, err := a.ReadEntry(e, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got := getRaw(t, c, fmt.Sprintf("/files/%d/pages/%d", f.ID, n+1)); !bytes.Equal(got, want) {
			t.Errorf("%s page %d: %d bytes served, the entry has %d", f.RelativePath, n+1, len(got), len(want))
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := getRaw(t, c, fmt.Sprintf("/files/%d/download", f.ID)); !bytes.Equal(got, want) {
		t.Errorf("%s download: %d bytes, the file has %d", f.RelativePath, len(got), len(want))
	}
}

// getRaw is a GET whose body is bytes, not JSON; anything but 200 fails.
func getRaw(t *testing.T, c apiClient, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", c.base+"/api/v1"+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v %.200s", path, resp.StatusCode, err, body)
	}
	return body
}
