package deploy

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// foldersThroughAPI scans, with both daemons running, a manga library laid
// out as people keep one: a volume that is a folder of page images, series
// art beside the books, and a page that is a copy of another. It checks
// what a user sees: one book per folder with its pages, the art as the
// series cover, and the copied page in a duplicate group of its own.
func foldersThroughAPI(t *testing.T, c apiClient, libraryRoot string) {
	t.Helper()
	dir := filepath.Join(libraryRoot, "manga")
	write := func(rel string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := func(seed int) []byte {
		t.Helper()
		data, err := fixtures.Image(fixtures.JPEG, 64, 96, seed)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for i := 1; i <= 11; i++ {
		write(fmt.Sprintf("Berserk/Vol 01/%d.jpg", i), page(100+i))
	}
	write("Berserk/Vol 01/12.jpg", page(101)) // a copy of page 1
	write("Berserk/cover.jpg", page(200))
	pages, err := fixtures.Pages(3, fixtures.PageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	book, err := fixtures.Zip(pages, 8)
	if err != nil {
		t.Fatal(err)
	}
	write("Saga/Saga 001.cbz", book)

	libID := createLibraryAt(t, c, "manga", dir)
	scan(t, c, libID)

	type file struct {
		ID           int64
		RelativePath string `json:"relative_path"`
		Role         string
		Format       *string
		TotalPages   *int64 `json:"total_pages"`
		Cover        struct{ Status, URL string }
	}
	var files struct{ Items []file }
	waitFor(t, "covers of the book and the art", 60*time.Second, func() bool {
		files.Items = nil
		c.do(t, "GET", fmt.Sprintf("/files?library_id=%d&limit=100&role=all", libID), "", &files)
		ready := 0
		for _, f := range files.Items {
			if f.Cover.Status == "ready" {
				ready++
			}
		}
		return ready == 3 // the folder book, the art, Saga 001
	})
	var order []string
	byPath := map[string]file{}
	for _, f := range files.Items {
		order = append(order, f.RelativePath+" "+f.Role)
		byPath[f.RelativePath] = f
	}
	want := []string{"Berserk/cover.jpg sidecar", "Berserk/Vol 01/ folder"} // case-insensitive: c before V
	for i := 1; i <= 12; i++ {
		want = append(want, fmt.Sprintf("Berserk/Vol 01/%d.jpg page", i))
	}
	want = append(want, "Saga/Saga 001.cbz book")
	if strings.Join(order, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files in natural order:\n%s\nwant:\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	if f := byPath["Berserk/Vol 01/"]; f.Format == nil || *f.Format != "folder" || f.TotalPages == nil || *f.TotalPages != 12 {
		t.Fatalf("the folder book: %+v", f)
	}
	getImage(t, c.base+byPath["Berserk/Vol 01/"].Cover.URL)
	var books struct{ Items []file }
	c.do(t, "GET", fmt.Sprintf("/files?library_id=%d&limit=100", libID), "", &books)
	if len(books.Items) != 2 || books.Items[0].Role != "folder" || books.Items[1].Role != "book" {
		t.Fatalf("GET /files lists %+v, want the folder book and Saga 001 only", books.Items)
	}
	folderBook := byPath["Berserk/Vol 01/"].ID
	for n, want := range map[int][]byte{1: page(101), 10: page(110), 12: page(101)} {
		if got := getRaw(t, c, fmt.Sprintf("/files/%d/pages/%d", folderBook, n)); !bytes.Equal(got, want) {
			t.Errorf("folder book page %d: %d bytes, want %d", n, len(got), len(want))
		}
	}

	var series struct {
		Items []struct {
			ID        int64
			Name      string
			FileCount int `json:"file_count"`
		}
	}
	c.do(t, "GET", fmt.Sprintf("/series?library_id=%d", libID), "", &series)
	if len(series.Items) != 2 || series.Items[0].Name != "Berserk" || series.Items[0].FileCount != 1 {
		t.Fatalf("series %+v: want Berserk with its one book, and Saga", series.Items)
	}
	var detail struct {
		Details struct {
			CoverFileID int64 `json:"cover_file_id"`
			Cover       struct{ URL string }
		}
	}
	c.do(t, "GET", fmt.Sprintf("/series/%d", series.Items[0].ID), "", &detail)
	if art := byPath["Berserk/cover.jpg"]; detail.Details.CoverFileID != art.ID {
		t.Fatalf("Berserk's cover is file %d, want the art %d", detail.Details.CoverFileID, art.ID)
	}
	getImage(t, c.base+detail.Details.Cover.URL)

	waitFor(t, "the copied page grouped with its original", 60*time.Second, func() bool {
		var groups struct {
			Items []struct {
				GroupKey string `json:"group_key"`
			}
		}
		c.do(t, "GET", "/duplicates/groups?limit=200", "", &groups)
		for _, g := range groups.Items {
			var members struct{ Items []file }
			c.do(t, "GET", "/duplicates/groups/"+g.GroupKey+"/files", "", &members)
			var paths []string
			for _, m := range members.Items {
				paths = append(paths, m.RelativePath+" "+m.Role)
			}
			if strings.Join(paths, ",") == "Berserk/Vol 01/1.jpg page,Berserk/Vol 01/12.jpg page" {
				return true
			}
		}
		return false
	})
}

// getImage fetches a signed cover URL as a plain <img> would: no token.
func getImage(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
		t.Fatalf("cover %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
