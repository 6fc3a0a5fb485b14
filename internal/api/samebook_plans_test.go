package api_test

import (
	"bytes"
	"fmt"
	"testing"
)

// TestSamePagesPlans: kind same_pages plans the groups /duplicates/books
// lists as same_pages, by their keys or all of them, with prefer_format
// (extensions or formats), smallest and explicit; the plan says its kind
// and lists each group under its same_pages key; contains and
// same_pages_by_index groups are refused (group_report_only), and every
// bad form of the new fields is refused before anything is written.
func TestSamePagesPlans(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	hashed := func(id int64, b byte) {
		e.exec(`UPDATE library_files SET hash_algorithm = 'blake3', content_hash = ?, hashed_size_bytes = size_bytes,
			hashed_mtime_ns = mtime_ns, needs_hash = 0 WHERE id = ?`, bytes.Repeat([]byte{b}, 32), id)
	}
	cbz := e.digestedBook(lib, "a.cbz", "zip", 1000, 1, 2, 3)
	cb7 := e.digestedBook(lib, "a.cb7", "7z", 900, 1, 2, 3)
	cbr := e.digestedBook(lib, "a.cbr", "rar", 950, 1, 2, 3)
	credit := e.digestedBook(lib, "a-credit.cbz", "zip", 1100, 9, 1, 2, 3)
	for i, id := range []int64{cbz, cb7, cbr, credit} {
		hashed(id, byte(10+i))
	}
	var key, containsKey string
	for _, g := range e.sameBookGroups(t) {
		switch g.Kind {
		case "same_pages":
			key = g.Key
		case "contains":
			containsKey = g.Key
		}
	}
	if key == "" || containsKey == "" {
		t.Fatal("no same_pages or contains group listed")
	}
	plan := func(body string) planView {
		t.Helper()
		r := e.call("POST", "/api/v1/duplicates/plans", body)
		e.expect(r, 201, "")
		var p planView
		r.decode(t, &p)
		return p
	}
	for _, tc := range []struct {
		body string
		keep int64
	}{
		{fmt.Sprintf(`{"kind": "same_pages", "group_keys": [%q], "policy": "prefer_format", "prefer_formats": ["cbz", "cb7", "cbr"]}`, key), cbz},
		{`{"kind": "same_pages", "all": true, "policy": "prefer_format", "prefer_formats": ["7z", "zip"]}`, cb7},
		{fmt.Sprintf(`{"kind": "same_pages", "all": true, "library_id": %d, "policy": "smallest"}`, lib), cb7},
		{fmt.Sprintf(`{"kind": "same_pages", "group_keys": [%q], "policy": "explicit", "keep": {%[1]q: %d}}`, key, cbr), cbr},
	} {
		p := plan(tc.body)
		if p.Kind != "same_pages" || len(p.Groups) != 1 || p.Groups[0].GroupKey != key || p.Groups[0].Keep.FileID != tc.keep ||
			len(p.Groups[0].Remove) != 2 || p.RemoveCount != 2 {
			t.Fatalf("%s: plan %+v", tc.body, p)
		}
	}
	if p := plan(`{"all": true, "policy": "oldest"}`); p.Kind != "bytes" || len(p.Groups) != 0 {
		t.Fatalf("a byte plan of a library without byte duplicates: %+v", p)
	}

	e.unchanged(func() {
		for _, tc := range []struct{ body, code string }{
			{fmt.Sprintf(`{"kind": "contains", "group_keys": [%q], "policy": "oldest"}`, containsKey), "group_report_only"},
			{`{"kind": "same_pages_by_index", "all": true, "policy": "oldest"}`, "group_report_only"},
			{`{"kind": "Same_Pages", "all": true, "policy": "oldest"}`, "invalid_field"},
			{`{"kind": 3, "all": true, "policy": "oldest"}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "oldest", "prefer_formats": "zip"}`, "invalid_field"},
			{`{"kind": "same_pages", "group_keys": ["blake3:` + hashA + `"], "policy": "oldest"}`, "invalid_group_key"},
			{`{"kind": "same_pages", "group_keys": ["` + key[:62] + `"], "policy": "oldest"}`, "invalid_group_key"},
			{`{"kind": "same_pages", "group_keys": ["` + hashA[:62] + `ZZ"], "policy": "oldest"}`, "invalid_group_key"},
			{`{"group_keys": ["` + key + `"], "policy": "oldest"}`, "invalid_group_key"},
			{`{"kind": "same_pages", "group_keys": ["` + hashA + `"], "policy": "oldest"}`, "group_not_found"},
			{`{"kind": "same_pages", "all": true, "min_size_bytes": 10, "policy": "oldest"}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "prefer_format"}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "prefer_format", "prefer_formats": ["cbz", "zip"]}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "prefer_format", "prefer_formats": ["pdf"]}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "prefer_format", "prefer_formats": ["ZIP"]}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "smallest", "prefer_formats": ["zip"]}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "largest"}`, "invalid_field"},
			{`{"kind": "same_pages", "all": true, "policy": "explicit", "keep": {"blake3:` + hashA + `": 1}}`, "invalid_group_key"},
			{fmt.Sprintf(`{"kind": "same_pages", "group_keys": [%q], "policy": "explicit", "keep": {%[1]q: %d}}`, key, credit), "plan_invalid"},
		} {
			status := 400
			if tc.code == "group_not_found" {
				status = 404
			}
			e.expect(e.call("POST", "/api/v1/duplicates/plans", tc.body), status, tc.code)
		}
	})
}
