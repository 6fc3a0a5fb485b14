package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// resolveThroughAPI resolves duplicates with both daemons running: three
// copies of a book are scanned and hashed into one group, a plan keeps the
// oldest, the library is allowed deletion, and the plan's delete job moves
// the two other copies into the library's trash, bytes unchanged.
func resolveThroughAPI(t *testing.T, c apiClient, libraryRoot string) {
	t.Helper()
	dir := filepath.Join(libraryRoot, "dupes")
	pages, err := fixtures.Pages(2, fixtures.PageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	book, err := fixtures.Zip(pages, 8)
	if err != nil {
		t.Fatal(err)
	}
	copies := []string{"Saga/Saga 001.cbz", "Inbox/Saga 001.cbz", "Inbox/Saga 001 (1).cbz"}
	for i, rel := range copies {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, book, 0o644); err != nil {
			t.Fatal(err)
		}
		mtime := time.Date(2020+i, 1, 1, 0, 0, 0, 0, time.UTC) // the first is the oldest
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	var lib struct{ ID int64 }
	if code := c.do(t, "POST", "/libraries", fmt.Sprintf(`{"name":"dupes","path":%q}`, dir), &lib); code != 201 {
		t.Fatalf("create library: %d", code)
	}
	if code := c.do(t, "POST", "/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, lib.ID), nil); code != 201 {
		t.Fatalf("request scan: %d", code)
	}
	var plan struct {
		ID          int64
		RemoveCount int64 `json:"remove_count"`
		Groups      []struct {
			Keep struct {
				RelativePath string `json:"relative_path"`
			}
		}
	}
	waitFor(t, "the three copies grouped", 60*time.Second, func() bool {
		var groups struct {
			Items []struct {
				FileCount int `json:"file_count"`
			}
		}
		c.do(t, "GET", "/duplicates/groups?limit=200", "", &groups)
		for _, g := range groups.Items {
			if g.FileCount == 3 {
				return true
			}
		}
		return false
	})
	if code := c.do(t, "POST", "/duplicates/plans", fmt.Sprintf(`{"all": true, "library_id": %d, "policy": "oldest"}`, lib.ID), &plan); code != 201 {
		t.Fatalf("plan: %d", code)
	}
	if plan.RemoveCount != 2 || len(plan.Groups) != 1 || plan.Groups[0].Keep.RelativePath != copies[0] {
		t.Fatalf("plan %+v: want the oldest copy kept", plan)
	}
	execute := fmt.Sprintf("/duplicates/plans/%d/execute", plan.ID)
	if code := c.do(t, "POST", execute, "", nil); code != 409 {
		t.Fatalf("execute on a library that does not allow deletion: %d, want 409", code)
	}
	if code := c.do(t, "PATCH", fmt.Sprintf("/libraries/%d", lib.ID), `{"allow_delete": true}`, nil); code != 200 {
		t.Fatalf("allow delete: %d", code)
	}
	var job struct{ ID int64 }
	if code := c.do(t, "POST", execute, "", &job); code != 202 {
		t.Fatalf("execute: %d", code)
	}
	waitFor(t, "the delete job", 60*time.Second, func() bool {
		var j struct{ Status string }
		c.do(t, "GET", fmt.Sprintf("/jobs/%d", job.ID), "", &j)
		if j.Status == "failed" || j.Status == "cancelled" {
			t.Fatalf("delete job %s", j.Status)
		}
		return j.Status == "completed"
	})
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(copies[0]))); err != nil {
		t.Fatalf("the keeper: %v", err)
	}
	for _, rel := range copies[1:] {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); !os.IsNotExist(err) {
			t.Errorf("%s still in place: %v", rel, err)
		}
		data, err := os.ReadFile(filepath.Join(dir, ".bindery-trash", strconv.FormatInt(job.ID, 10), filepath.FromSlash(rel)))
		if err != nil || string(data) != string(book) {
			t.Errorf("%s in the trash: %v", rel, err)
		}
	}
	var after struct {
		Groups []struct {
			Remove []struct{ Outcome string }
		}
	}
	c.do(t, "GET", fmt.Sprintf("/duplicates/plans/%d", plan.ID), "", &after)
	for _, r := range after.Groups[0].Remove {
		if r.Outcome != "trashed" {
			t.Errorf("outcome %q, want trashed", r.Outcome)
		}
	}

	var restore struct{ ID int64 }
	if code := c.do(t, "POST", fmt.Sprintf("/trash/%d/restore", job.ID), "", &restore); code != 202 {
		t.Fatalf("restore: %d", code)
	}
	waitFor(t, "the restore job", 60*time.Second, func() bool {
		var j struct{ Status string }
		c.do(t, "GET", fmt.Sprintf("/jobs/%d", restore.ID), "", &j)
		return j.Status == "completed"
	})
	for _, rel := range copies {
		if data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel))); err != nil || string(data) != string(book) {
			t.Errorf("%s after the restore: %v", rel, err)
		}
	}
}
