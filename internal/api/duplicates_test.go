package api_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestDuplicateGroupsStatus: a page of groups says whether the search for
// them is complete, and what is left of each hash pass.
func TestDuplicateGroupsStatus(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	var ids []int64
	for _, rel := range []string{"a.cbz", "b.cbz", "c.cbz", "odd.cbz"} {
		ids = append(ids, e.file(lib, rel))
	}
	if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET size_bytes = 7777 WHERE id = ?`, ids[3]); err != nil {
		t.Fatal(err)
	}
	type status struct {
		Complete          bool   `json:"complete"`
		HashAlgorithm     string `json:"hash_algorithm"`
		CandidatesPending int64  `json:"candidates_pending"`
		CandidateBytes    int64  `json:"candidate_bytes"`
		BackfillPending   int64  `json:"backfill_pending"`
		BackfillBytes     int64  `json:"backfill_bytes"`
		Unreadable        int64  `json:"unreadable"`
	}
	get := func() status {
		t.Helper()
		r := e.call("GET", "/api/v1/duplicates/groups", "")
		e.expect(r, 200, "")
		var p struct {
			Items  []map[string]any `json:"items"`
			Status *status          `json:"status"`
		}
		r.decode(t, &p)
		if p.Status == nil {
			t.Fatalf("no status in %s", r.Body)
		}
		return *p.Status
	}

	t.Run("same-size files are candidates, the odd one is backfill", func(t *testing.T) {
		want := status{HashAlgorithm: "blake3", CandidatesPending: 3, CandidateBytes: 3000, BackfillPending: 1, BackfillBytes: 7777}
		if got := get(); got != want {
			t.Fatalf("status %+v, want %+v", got, want)
		}
	})
	t.Run("complete once every candidate is hashed", func(t *testing.T) {
		sum := strings.Repeat("ab", 32)
		if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET hash_algorithm = 'blake3', content_hash = ?,
			needs_hash = 0 WHERE id IN (?, ?, ?)`, unhex(sum), ids[0], ids[1], ids[2]); err != nil {
			t.Fatal(err)
		}
		want := status{Complete: true, HashAlgorithm: "blake3", BackfillPending: 1, BackfillBytes: 7777}
		if got := get(); got != want {
			t.Fatalf("status %+v, want %+v", got, want)
		}
	})
	t.Run("a file in read-error backoff is unreadable, not pending", func(t *testing.T) {
		if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET hash_retry_after = '2999-01-01T00:00:00.000Z',
			hash_error_count = 1 WHERE id = ?`, ids[3]); err != nil {
			t.Fatal(err)
		}
		want := status{Complete: true, HashAlgorithm: "blake3", Unreadable: 1}
		if got := get(); got != want {
			t.Fatalf("status %+v, want %+v", got, want)
		}
	})
	t.Run("another algorithm makes every file due again", func(t *testing.T) {
		e.expect(e.call("PATCH", "/api/v1/settings", `{"hash.algorithm":"sha256"}`), 200, "")
		want := status{HashAlgorithm: "sha256", CandidatesPending: 3, CandidateBytes: 3000, Unreadable: 1}
		if got := get(); got != want {
			t.Fatalf("status %+v, want %+v", got, want)
		}
	})
	t.Run("only the first page carries it", func(t *testing.T) {
		if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET content_hash = ? WHERE id = ?`,
			unhex(strings.Repeat("cd", 32)), ids[2]); err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET hash_algorithm = 'blake3', content_hash = ?,
			needs_hash = 0, size_bytes = 1000, hash_retry_after = NULL WHERE id = ?`, unhex(strings.Repeat("cd", 32)), ids[3]); err != nil {
			t.Fatal(err)
		}
		r := e.call("GET", "/api/v1/duplicates/groups?limit=1", "")
		e.expect(r, 200, "")
		var first struct {
			NextCursor *string         `json:"next_cursor"`
			Status     json.RawMessage `json:"status"`
		}
		r.decode(t, &first)
		if first.NextCursor == nil || string(first.Status) == "null" {
			t.Fatalf("first page of two: %s", r.Body)
		}
		r = e.call("GET", "/api/v1/duplicates/groups?limit=1&cursor="+url.QueryEscape(*first.NextCursor), "")
		e.expect(r, 200, "")
		var next struct {
			Items  []json.RawMessage `json:"items"`
			Status json.RawMessage   `json:"status"`
		}
		r.decode(t, &next)
		if len(next.Items) != 1 || string(next.Status) != "null" {
			t.Fatalf("second page: %s", r.Body)
		}
	})
}
