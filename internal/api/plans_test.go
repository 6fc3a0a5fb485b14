package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

const (
	hashA = "aa00000000000000000000000000000000000000000000000000000000000000"
	hashB = "bb00000000000000000000000000000000000000000000000000000000000000"
)

// hashed marks a file hashed with hex digest h, as a hash job would.
func (e *env) hashed(id int64, h string, mtime int64) {
	e.t.Helper()
	if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET hash_algorithm = 'blake3', content_hash = ?,
		hashed_size_bytes = size_bytes, hashed_mtime_ns = ?, mtime_ns = ?, needs_hash = 0 WHERE id = ?`, unhex(h), mtime, mtime, id); err != nil {
		e.t.Fatal(err)
	}
}

type planView struct {
	ID          int64
	Kind        string
	Policy      string
	Action      string
	GroupCount  int64 `json:"group_count"`
	RemoveCount int64 `json:"remove_count"`
	BytesFreed  int64 `json:"bytes_freed"`
	JobID       *int64
	Groups      []struct {
		GroupKey string `json:"group_key"`
		Keep     struct {
			FileID int64 `json:"file_id"`
		}
		Remove []struct {
			FileID int64 `json:"file_id"`
		}
	}
}

func TestPlans(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	a1, a2, a3 := e.file(lib, "a/one.cbz"), e.file(lib, "b/one.cbz"), e.file(lib, "c/long/path/one.cbz")
	b1, b2 := e.file(lib, "x/two.cbz"), e.file(lib, "y/two.cbz")
	e.hashed(a1, hashA, 300)
	e.hashed(a2, hashA, 100)
	e.hashed(a3, hashA, 200)
	e.hashed(b1, hashB, 100)
	e.hashed(b2, hashB, 200)

	r := e.call("POST", "/api/v1/duplicates/plans", `{"all": true, "policy": "oldest"}`)
	e.expect(r, 201, "")
	var p planView
	r.decode(t, &p)
	if p.GroupCount != 2 || p.RemoveCount != 3 || p.BytesFreed != 3000 || p.Action != "trash" || p.JobID != nil {
		t.Fatalf("plan %+v", p)
	}
	keeps := map[int64]bool{}
	for _, g := range p.Groups {
		keeps[g.Keep.FileID] = true
	}
	if !keeps[a2] || !keeps[b1] {
		t.Fatalf("oldest kept %v, want %d and %d", keeps, a2, b1)
	}

	t.Run("explicit with a narrowed removal", func(t *testing.T) {
		body := fmt.Sprintf(`{"group_keys": ["blake3:%s"], "policy": "explicit", "keep": {"blake3:%[1]s": %d}, "remove": {"blake3:%[1]s": [%[3]d]}}`, hashA, a3, a1)
		r := e.call("POST", "/api/v1/duplicates/plans", body)
		e.expect(r, 201, "")
		var p planView
		r.decode(t, &p)
		if len(p.Groups) != 1 || p.Groups[0].Keep.FileID != a3 || len(p.Groups[0].Remove) != 1 || p.Groups[0].Remove[0].FileID != a1 {
			t.Fatalf("plan %+v", p)
		}
	})
	t.Run("list and get", func(t *testing.T) {
		e.expect(e.call("GET", "/api/v1/duplicates/plans?limit=1", ""), 200, "")
		e.expect(e.call("GET", "/api/v1/duplicates/plans?cursor=nope", ""), 400, "invalid_cursor")
		e.expect(e.call("GET", fmt.Sprintf("/api/v1/duplicates/plans/%d", p.ID), ""), 200, "")
		e.expect(e.call("GET", "/api/v1/duplicates/plans/999", ""), 404, "plan_not_found")
		e.expect(e.call("GET", "/api/v1/duplicates/plans/x", ""), 400, "")
	})
	t.Run("execute", func(t *testing.T) {
		exec := fmt.Sprintf("/api/v1/duplicates/plans/%d/execute", p.ID)
		e.unchanged(func() { e.expect(e.call("POST", exec, ""), 409, "library_read_only") })
		e.expect(e.call("PATCH", fmt.Sprintf("/api/v1/libraries/%d", lib), `{"allow_delete": true}`), 200, "")
		e.expect(e.call("POST", exec, `{"force": true}`), 400, "unknown_field")
		r := e.call("POST", exec, "")
		e.expect(r, 202, "")
		var job struct {
			ID      int64
			Kind    string
			Payload struct {
				PlanID int64 `json:"plan_id"`
			}
		}
		r.decode(t, &job)
		if job.Kind != "delete" || job.Payload.PlanID != p.ID {
			t.Fatalf("job %+v", job)
		}
		again := e.call("POST", exec, "")
		e.expect(again, 200, "")
		var same struct{ ID int64 }
		again.decode(t, &same)
		if same.ID != job.ID {
			t.Fatalf("second execute made job %d, first %d", same.ID, job.ID)
		}
		e.expect(e.call("POST", "/api/v1/duplicates/plans/999/execute", ""), 404, "plan_not_found")

		restore := fmt.Sprintf("/api/v1/trash/%d/restore", job.ID)
		e.unchanged(func() {
			e.expect(e.call("POST", restore, ""), 400, "not_in_trash")
			e.expect(e.call("POST", "/api/v1/trash/999/restore", ""), 404, "job_not_found")
			e.expect(e.call("POST", restore, `{"file_ids": [-1]}`), 400, "invalid_field")
			e.expect(e.call("POST", restore, `{"files": [1]}`), 400, "unknown_field")
		})
		var trashed int64
		for _, g := range p.Groups {
			trashed = g.Remove[0].FileID
		}
		if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO delete_outcomes (job_id, file_id, outcome, trash_path, created_at)
			VALUES (?, ?, 'trashed', 'x', ?)`, job.ID, trashed, e.now()); err != nil {
			t.Fatal(err)
		}
		e.expect(e.call("POST", restore, fmt.Sprintf(`{"file_ids": [%d]}`, a1)), 400, "not_in_trash")
		// Its delete job still holds the file: a restore waits for it.
		e.unchanged(func() {
			e.expect(e.call("POST", restore, fmt.Sprintf(`{"file_ids": [%d]}`, trashed)), 409, "files_busy")
		})
		e.exec(`UPDATE jobs SET status = 'completed', finished_at = ? WHERE id = ?`, e.now(), job.ID)
		r = e.call("POST", restore, fmt.Sprintf(`{"file_ids": [%d]}`, trashed))
		e.expect(r, 202, "")
		var back struct {
			Kind    string
			Payload struct {
				PlanID int64 `json:"plan_id"`
			}
		}
		r.decode(t, &back)
		if back.Kind != "delete" {
			t.Fatalf("restore job %+v", back)
		}
		var rp struct {
			Action     string
			TrashJobID int64 `json:"trash_job_id"`
			Trash      []struct {
				FileID int64 `json:"file_id"`
			}
		}
		e.call("GET", fmt.Sprintf("/api/v1/duplicates/plans/%d", back.Payload.PlanID), "").decode(t, &rp)
		if rp.Action != "restore" || rp.TrashJobID != job.ID || len(rp.Trash) != 1 || rp.Trash[0].FileID != trashed {
			t.Fatalf("restore plan %+v", rp)
		}
	})
	t.Run("unlink needs allow_unlink", func(t *testing.T) {
		r := e.call("POST", "/api/v1/duplicates/plans", `{"all": true, "policy": "oldest", "action": "unlink"}`)
		e.expect(r, 201, "")
		var p planView
		r.decode(t, &p)
		e.unchanged(func() {
			e.expect(e.call("POST", fmt.Sprintf("/api/v1/duplicates/plans/%d/execute", p.ID), ""), 409, "unlink_not_allowed")
		})
	})
	t.Run("an expired plan", func(t *testing.T) {
		r := e.call("POST", "/api/v1/duplicates/plans", `{"all": true, "policy": "shortest_path"}`)
		e.expect(r, 201, "")
		var p planView
		r.decode(t, &p)
		e.exec(`UPDATE delete_plans SET expires_at = ? WHERE id = ?`, "2000-01-01 00:00:00.000", p.ID)
		e.unchanged(func() {
			e.expect(e.call("POST", fmt.Sprintf("/api/v1/duplicates/plans/%d/execute", p.ID), ""), 409, "plan_expired")
		})
	})
}

func TestBadPlans(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	a1, a2 := e.file(lib, "a.cbz"), e.file(lib, "b.cbz")
	e.hashed(a1, hashA, 1)
	e.hashed(a2, hashA, 2)
	key := "blake3:" + hashA
	long := make([]string, 10_001)
	for i := range long {
		long[i] = fmt.Sprintf("%q", fmt.Sprintf("blake3:%064x", i))
	}
	for _, tc := range []struct{ body, code string }{
		{`{"policy": "oldest"}`, "invalid_field"},
		{`{"all": true, "group_keys": ["` + key + `"], "policy": "oldest"}`, "invalid_field"},
		{`{"group_keys": ["blake3:XYZ"], "policy": "oldest"}`, "invalid_group_key"},
		{`{"group_keys": [` + strings.Join(long, ",") + `], "policy": "oldest"}`, "plan_too_large"},
		{`{"all": true, "policy": "newest"}`, "invalid_field"},
		{`{"all": true, "policy": "oldest", "action": "shred"}`, "invalid_field"},
		{`{"all": true, "policy": "prefer_library"}`, "invalid_field"},
		{`{"all": true, "policy": "prefer_path_prefix", "prefer_path_prefix": "../outside"}`, "invalid_field"},
		{`{"all": true, "policy": "prefer_path_prefix", "prefer_path_prefix": "/abs"}`, "invalid_field"},
		{`{"all": true, "policy": "oldest", "prefer_path_prefix": "a"}`, "invalid_field"},
		{`{"all": true, "policy": "oldest", "keep": {"` + key + `": 1}}`, "invalid_field"},
		{`{"all": true, "policy": "explicit"}`, "invalid_field"},
		{`{"group_keys": ["` + key + `"], "library_id": 1, "policy": "oldest"}`, "invalid_field"},
		{`{"all": true, "min_size_bytes": -1, "policy": "oldest"}`, "invalid_field"},
		{`{"all": true, "policy": "explicit", "keep": {"nope": 1}}`, "invalid_group_key"},
		{fmt.Sprintf(`{"group_keys": ["%s"], "policy": "explicit", "keep": {"%[1]s": 999}}`, key), "plan_invalid"},
		{fmt.Sprintf(`{"group_keys": ["%s"], "policy": "explicit", "keep": {"%[1]s": %d}, "remove": {"%[1]s": [%[2]d]}}`, key, a1), "plan_invalid"},
		{fmt.Sprintf(`{"group_keys": ["%s"], "policy": "explicit", "keep": {"%[1]s": %d}, "remove": {"%[1]s": [999]}}`, key, a1), "plan_invalid"},
		{`{"group_keys": ["blake3:` + hashB + `"], "policy": "oldest"}`, "group_not_found"},
		{`{"all": true, "policy": "oldest", "surprise": 1}`, "unknown_field"},
		{`[]`, "invalid_json"},
	} {
		e.unchanged(func() {
			r := e.call("POST", "/api/v1/duplicates/plans", tc.body)
			if r.Code/100 != 4 || r.errCode() != tc.code {
				t.Errorf("%.80s: %d %s, want %s", tc.body, r.Code, r.Body, tc.code)
			}
		})
	}
}
