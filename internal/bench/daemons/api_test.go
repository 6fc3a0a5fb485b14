package daemons

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestAPIWorkload generates a small database, runs the real controld on
// it and checks that the generated cursors land where the formula says
// (so the load walks real keyset pages, not 400s), then a short load.
func TestAPIWorkload(t *testing.T) {
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	bs := benchx.NewBinaries(root, filepath.Join(dir, "bin"), t.Logf)
	bin, err := bs.Build(ctx, "./cmd/controld")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "library")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := generateAPIDB(ctx, bin, filepath.Join(dir, "bindery.db"), lib, 5000, 600)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startControld(ctx, bin, dir, db.Path, lib)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)

	get := func(t *testing.T, path, cursor string) []map[string]any {
		t.Helper()
		u := srv.base + path
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+srv.token)
		resp, err := srv.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var page struct {
			Items []map[string]any `json:"items"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("%s: %d %s", u, resp.StatusCode, body)
		}
		return page.Items
	}

	t.Run("job cursors resume right after their job", func(t *testing.T) {
		for _, id := range []int{600, 301, 2} {
			items := get(t, "/api/v1/jobs?limit=5", db.jobCursor(id))
			if len(items) == 0 || items[0]["id"] != float64(id-1) {
				t.Fatalf("after job %d: %v", id, items)
			}
		}
		// The scheduler may have queued a job of its own since start.
		if first := get(t, "/api/v1/jobs?limit=5", ""); len(first) != 5 || first[0]["id"].(float64) < 600 {
			t.Fatalf("first page %v", first)
		}
	})

	t.Run("group cursors resume inside the list", func(t *testing.T) {
		groups := db.groups()
		first := get(t, "/api/v1/duplicates/groups?limit=50", "")
		if len(first) != 50 || first[0]["file_count"] != float64(3) {
			t.Fatalf("first page %v", first)
		}
		// Groups g and g+5000 tie on size; with 1,000 groups every size is
		// distinct: the next group after g is the one of the next smaller size.
		for _, g := range []int{groups - 1, groups / 2, 1} {
			items := get(t, "/api/v1/duplicates/groups?limit=5", db.groupCursor(g))
			want := float64((g - 1) % 5000 * 3000)
			if len(items) == 0 || items[0]["total_size_bytes"] != want {
				t.Fatalf("after group %d: %v, want total size %v", g, items, want)
			}
		}
	})

	t.Run("a short load sees no errors", func(t *testing.T) {
		ep := endpoint{name: "jobs", path: "/api/v1/jobs?limit=50", cursors: anchors(100, 1, func(r *rand.Rand) string {
			return db.jobCursor(1 + r.IntN(db.Jobs))
		})}
		res := srv.load(ctx, ep, 300*time.Millisecond)
		if res.Errors != 0 || res.Sent != 60 || res.P99 <= 0 {
			t.Fatalf("load: %+v", res)
		}
		if mb := srv.peakRSSMB(); mb < 5 {
			t.Fatalf("controld VmHWM %.1f MB", mb)
		}
	})

	t.Run("generation is checked", func(t *testing.T) {
		if _, err := generateAPIDB(ctx, bin, filepath.Join(dir, "bindery.db"), lib, 10, 10); err == nil {
			t.Fatal("generating into a filled database must fail (duplicate ids)")
		}
		bad := filepath.Join(dir, "not-a-db")
		os.WriteFile(bad, []byte("this is not sqlite, it is long enough to be read as a header........"), 0o644)
		if _, err := generateAPIDB(ctx, bin, bad, lib, 10, 10); err == nil {
			t.Fatal("a non-database file must be refused")
		}
	})
}
