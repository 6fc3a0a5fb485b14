package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// sameBookThroughAPI resolves "the same book in another container" with
// both daemons running (issue 38): a library with a .cbr (a stored RAR4)
// and its .cbz repack (the same pages deflated, with a ComicInfo.xml) is
// scanned and hashed into one same_pages group of /duplicates/books; a
// plan of kind same_pages keeping the cbz trashes the cbr, whose bytes
// arrive in the trash unchanged; a restore brings it back byte-identical.
func sameBookThroughAPI(t *testing.T, c apiClient, libraryRoot string) {
	t.Helper()
	dir := filepath.Join(libraryRoot, "samebook")
	pages, err := fixtures.Pages(3, fixtures.PageOptions{Seed: 3800}) // pages no other book of the run has
	if err != nil {
		t.Fatal(err)
	}
	cbr := fixtures.RAR4(pages)
	cbz, err := fixtures.Zip(append(pages, fixtures.File{Name: "ComicInfo.xml", Data: []byte("<ComicInfo><Series>Saga</Series></ComicInfo>")}), 8)
	if err != nil {
		t.Fatal(err)
	}
	books := map[string][]byte{"Saga/Saga 001.cbr": cbr, "Saga/Saga 001.cbz": cbz}
	for rel, data := range books {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var lib struct{ ID int64 }
	if code := c.do(t, "POST", "/libraries", fmt.Sprintf(`{"name":"samebook","path":%q}`, dir), &lib); code != 201 {
		t.Fatalf("create library: %d", code)
	}
	if code := c.do(t, "POST", "/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, lib.ID), nil); code != 201 {
		t.Fatalf("request scan: %d", code)
	}
	waitFor(t, "one same_pages group of the cbr and the cbz", 90*time.Second, func() bool {
		var groups struct {
			Items []struct {
				Kind  string
				Books []struct {
					RelativePath string `json:"relative_path"`
				}
			}
		}
		c.do(t, "GET", "/duplicates/books?limit=200", "", &groups)
		n := 0
		for _, g := range groups.Items {
			if g.Kind == "same_pages" && len(g.Books) == 2 && books[g.Books[0].RelativePath] != nil && books[g.Books[1].RelativePath] != nil {
				n++
			}
		}
		return n == 1
	})
	if code := c.do(t, "PATCH", fmt.Sprintf("/libraries/%d", lib.ID), `{"allow_delete": true}`, nil); code != 200 {
		t.Fatalf("allow delete: %d", code)
	}
	var plan struct {
		ID          int64
		Kind        string
		RemoveCount int64 `json:"remove_count"`
		Groups      []struct {
			Keep struct {
				RelativePath string `json:"relative_path"`
			}
			Remove []struct {
				RelativePath string `json:"relative_path"`
			}
		}
	}
	body := fmt.Sprintf(`{"kind":"same_pages","all":true,"library_id":%d,"policy":"prefer_format","prefer_formats":["cbz","cb7","cbr"]}`, lib.ID)
	if code := c.do(t, "POST", "/duplicates/plans", body, &plan); code != 201 {
		t.Fatalf("plan: %d", code)
	}
	if plan.Kind != "same_pages" || plan.RemoveCount != 1 || len(plan.Groups) != 1 ||
		plan.Groups[0].Keep.RelativePath != "Saga/Saga 001.cbz" || plan.Groups[0].Remove[0].RelativePath != "Saga/Saga 001.cbr" {
		t.Fatalf("plan %+v: want the cbz kept, the cbr removed", plan)
	}
	var job struct{ ID int64 }
	if code := c.do(t, "POST", fmt.Sprintf("/duplicates/plans/%d/execute", plan.ID), "", &job); code != 202 {
		t.Fatalf("execute: %d", code)
	}
	waitJob(t, c, job.ID)
	if data, err := os.ReadFile(filepath.Join(dir, "Saga/Saga 001.cbz")); err != nil || !bytes.Equal(data, cbz) {
		t.Fatalf("the keeper: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Saga/Saga 001.cbr")); !os.IsNotExist(err) {
		t.Fatalf("the cbr still in place: %v", err)
	}
	trashed := filepath.Join(dir, ".bindery-trash", strconv.FormatInt(job.ID, 10), "Saga/Saga 001.cbr")
	if data, err := os.ReadFile(trashed); err != nil || !bytes.Equal(data, cbr) {
		t.Fatalf("the cbr in the trash: %v", err)
	}
	var restore struct{ ID int64 }
	if code := c.do(t, "POST", fmt.Sprintf("/trash/%d/restore", job.ID), "", &restore); code != 202 {
		t.Fatalf("restore: %d", code)
	}
	waitJob(t, c, restore.ID)
	if data, err := os.ReadFile(filepath.Join(dir, "Saga/Saga 001.cbr")); err != nil || !bytes.Equal(data, cbr) {
		t.Fatalf("the cbr after the restore: %v", err)
	}
}
