package api_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestSameBooks: books with one page signature key that differ in bytes
// or format make a group; byte-identical copies alone, missing files,
// books without a key and lone keys do not. Groups page in key order.
func TestSameBooks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	digest := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	set := func(id int64, k []byte, size int64, format string, hash []byte) {
		t.Helper()
		var alg any
		if hash != nil {
			alg = "blake3"
		}
		if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET pages_key = ?, size_bytes = ?, format = ?,
			hash_algorithm = ?, content_hash = ?, needs_hash = 0 WHERE id = ?`, k, size, format, alg, hash, id); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]int64{}
	for _, rel := range []string{"a.cbz", "a.cb7", "b.cbz", "b copy.cbz", "c.cbz", "c.cbr", "gone.cb7", "lone.cbz", "d.cbz", "d.cb7"} {
		ids[rel] = e.file(lib, rel)
	}
	set(ids["a.cbz"], key(1), 1000, "zip", digest(1))
	set(ids["a.cb7"], key(1), 900, "7z", digest(2))
	set(ids["b.cbz"], key(2), 1000, "zip", digest(3)) // byte-identical copies: no group
	set(ids["b copy.cbz"], key(2), 1000, "zip", digest(3))
	set(ids["c.cbz"], key(3), 1000, "zip", digest(4))
	set(ids["gone.cb7"], key(3), 800, "7z", digest(5)) // missing below: c.cbz is alone
	set(ids["lone.cbz"], key(4), 1000, "zip", nil)
	set(ids["d.cbz"], key(5), 1000, "zip", nil) // not hashed yet: differs in size
	set(ids["d.cb7"], key(5), 700, "7z", nil)
	e.exec(`UPDATE library_files SET is_missing = 1, missing_since = ? WHERE id = ?`, e.now(), ids["gone.cb7"])

	var got [][]string
	for _, g := range e.sameBookGroups(t) {
		if g.Kind != "same_pages_by_index" || len(g.Key) != 64 {
			t.Fatalf("group %+v", g)
		}
		var rels []string
		for _, b := range g.Books {
			rels = append(rels, b.RelativePath)
		}
		slices.Sort(rels)
		got = append(got, rels)
	}
	want := [][]string{{"a.cb7", "a.cbz"}, {"d.cb7", "d.cbz"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	for _, bad := range []string{"nope", "eyJrIjoiMTIifQ"} { // not base64 JSON; a key that is not 32 bytes
		e.expect(e.call("GET", "/api/v1/duplicates/books?cursor="+bad, ""), 400, "invalid_cursor")
	}
}

// TestSameBooksByDigest: books with equal ordered page digests make a
// same_pages group and one with an extra page at the start a contains
// group, listed before the signature groups, which leave the list once
// every book of theirs is digested; a cursor names a kind it knows.
func TestSameBooksByDigest(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	book := func(rel, format string, size int64, pages ...byte) int64 {
		return e.digestedBook(lib, rel, format, size, pages...)
	}
	book("x.cbz", "zip", 1000, 1, 2, 3)
	book("x.cb7", "7z", 900, 1, 2, 3)
	book("x credit.cbz", "zip", 1100, 9, 1, 2, 3)
	book("y.cbz", "zip", 1000, 4, 5)
	stale := book("y.cb7", "7z", 800, 4, 5)
	e.exec(`UPDATE library_files SET mtime_ns = 8 WHERE id = ?`, stale) // changed since: its digests no longer count

	var got []string
	for _, g := range e.sameBookGroups(t) {
		var rels []string
		for _, b := range g.Books {
			rels = append(rels, fmt.Sprintf("%s+%d", b.RelativePath, b.ExtraStart))
		}
		slices.Sort(rels)
		got = append(got, g.Kind+": "+strings.Join(rels, " "))
	}
	want := []string{"same_pages: x.cb7+0 x.cbz+0", "contains: x credit.cbz+1 x.cb7+0 x.cbz+0",
		"same_pages_by_index: y.cb7+0 y.cbz+0"}
	if !slices.Equal(got, want) {
		t.Fatalf("groups\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	bad := base64.RawURLEncoding.EncodeToString([]byte(`{"t":"similar","k":"` + strings.Repeat("00", 32) + `"}`))
	e.expect(e.call("GET", "/api/v1/duplicates/books?cursor="+bad, ""), 400, "invalid_cursor")
}

type sameBookGroup struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	Books []struct {
		RelativePath string `json:"relative_path"`
		ExtraStart   int    `json:"extra_pages_start"`
	} `json:"books"`
}

// sameBookGroups pages /duplicates/books one group at a time to its end.
func (e *env) sameBookGroups(t *testing.T) []sameBookGroup {
	t.Helper()
	var out []sameBookGroup
	cursor := ""
	for range 20 {
		r := e.call("GET", "/api/v1/duplicates/books?limit=1&cursor="+url.QueryEscape(cursor), "")
		e.expect(r, 200, "")
		var p struct {
			Items      []sameBookGroup `json:"items"`
			NextCursor *string         `json:"next_cursor"`
		}
		r.decode(t, &p)
		out = append(out, p.Items...)
		if p.NextCursor == nil {
			return out
		}
		cursor = *p.NextCursor
	}
	t.Fatal("paging does not end")
	return nil
}

// digestedBook inserts a book of lib whose page digests are the bytes of
// pages (each repeated 32 times), with a pages_key of its page count.
func (e *env) digestedBook(lib int64, rel, format string, size int64, pages ...byte) int64 {
	e.t.Helper()
	digest := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	id := e.file(lib, rel)
	e.exec(`UPDATE library_files SET pages_key = ?, size_bytes = ?, mtime_ns = 7, format = ? WHERE id = ?`,
		digest(byte(len(pages))), size, format, id)
	for i, p := range pages {
		e.exec(`INSERT INTO page_digests (file_id, page_seq, file_size_bytes, file_mtime_ns, page_size, digest)
			VALUES (?, ?, ?, 7, 100, ?)`, id, i, size, digest(p))
	}
	return id
}
