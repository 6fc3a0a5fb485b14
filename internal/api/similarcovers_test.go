package api_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/jpeg"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/thumbs"
)

// coverHashOf renders the picture encoded at JPEG quality q as workerd
// does and returns its cover hash.
func coverHashOf(t *testing.T, seed, q int) int64 {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, fixtures.CoverArt(600, 900, uint64(seed)), &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	c, err := thumbs.RenderCover(buf.Bytes(), thumbs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := thumbs.CoverHash(c.Data)
	if err != nil {
		t.Fatal(err)
	}
	return int64(h)
}

// coveredBook inserts a book with a ready cover of hash h, content hash
// content (nil: not hashed) and pages_key key (nil: none).
func (e *env) coveredBook(lib int64, rel string, h int64, content, key []byte) int64 {
	e.t.Helper()
	id := e.file(lib, rel)
	var alg any
	if content != nil {
		alg = "blake3"
	}
	e.exec(`UPDATE library_files SET hash_algorithm = ?, content_hash = ?, needs_hash = 0, pages_key = ? WHERE id = ?`,
		alg, content, key, id)
	e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, cover_hash, created_at, updated_at)
		VALUES (?, ?, ?, 'ready', 'webp', ?, ?, ?, ?)`, id, lib, fmt.Sprintf("library:%d", lib), fmt.Sprintf("covers/000/%d.webp", id), h, e.now(), e.now())
	return id
}

type coverPair struct {
	Distance int `json:"distance"`
	Books    []struct {
		ID           int64  `json:"id"`
		RelativePath string `json:"relative_path"`
		CoverHash    string `json:"cover_hash"`
		CoverURL     string `json:"cover_url"`
	} `json:"books"`
}

// similarCovers pages /duplicates/covers one pair at a time to its end.
func (e *env) similarCovers(t *testing.T) []coverPair {
	t.Helper()
	var out []coverPair
	cursor := ""
	for range 50 {
		r := e.call("GET", "/api/v1/duplicates/covers?limit=1&cursor="+url.QueryEscape(cursor), "")
		e.expect(r, 200, "")
		var p struct {
			Items      []coverPair `json:"items"`
			NextCursor *string     `json:"next_cursor"`
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

func pairNames(ps []coverPair) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Books[0].RelativePath+"~"+p.Books[1].RelativePath)
	}
	return out
}

// TestSimilarCovers: a book and its repack whose cover page was
// recompressed (JPEG quality 95 → 50: other page bytes, so another page
// signature and no same-book group) are listed; its byte copy and a book
// of its page signature are not listed with it (already grouped), nor are
// a different cover, a missing book, two books of one page-digest group,
// or a flat cover. Pairs page closest first.
func TestSimilarCovers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	fill := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	sharp, soft, other, third := coverHashOf(t, 1, 95), coverHashOf(t, 1, 50), coverHashOf(t, 2, 95), coverHashOf(t, 3, 95)
	e.coveredBook(lib, "a.cbz", sharp, fill(1), fill(11))
	e.coveredBook(lib, "a repack.cbz", soft, fill(2), fill(12))
	e.coveredBook(lib, "a copy.cbz", sharp, fill(1), fill(11)) // a byte copy of a.cbz
	e.coveredBook(lib, "a.cb7", sharp, fill(3), fill(11))      // a.cbz's pages in 7z: same_pages_by_index
	e.coveredBook(lib, "b.cbz", other, fill(4), fill(14))
	gone := e.coveredBook(lib, "gone.cbz", sharp, fill(5), fill(15))
	e.exec(`UPDATE library_files SET is_missing = 1, missing_since = ? WHERE id = ?`, e.now(), gone)
	e.coveredBook(lib, "flat1.cbz", 0, fill(6), nil)
	e.coveredBook(lib, "flat2.cbz", 0, fill(7), nil)
	for _, rel := range []string{"x.cbz", "x.cb7"} { // one same_pages group by digests
		id := e.digestedBook(lib, rel, map[bool]string{true: "zip", false: "7z"}[strings.HasSuffix(rel, "cbz")], 900, 1, 2, 3)
		e.exec(`UPDATE library_files SET pages_key = NULL WHERE id = ?`, id)
		e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, cover_hash, created_at, updated_at)
			VALUES (?, ?, ?, 'ready', 'webp', 'covers/000/x.webp', ?, ?, ?)`, id, lib, fmt.Sprintf("library:%d", lib), third, e.now(), e.now())
	}

	pairs := e.similarCovers(t)
	got := pairNames(pairs)
	want := []string{"a.cbz~a repack.cbz", "a repack.cbz~a copy.cbz", "a repack.cbz~a.cb7"}
	if !slices.Equal(got, want) {
		t.Fatalf("pairs %v, want %v (sharp %016x soft %016x other %016x)", got, want, uint64(sharp), uint64(soft), uint64(other))
	}
	for i, p := range pairs {
		if p.Distance < 1 || p.Distance > 6 || (i > 0 && p.Distance < pairs[i-1].Distance) {
			t.Fatalf("pair %d distance %d (order or range)", i, p.Distance)
		}
		if p.Books[0].CoverHash != fmt.Sprintf("%016x", uint64(sharp)) && p.Books[0].CoverHash != fmt.Sprintf("%016x", uint64(soft)) {
			t.Fatalf("pair %d cover hash %s", i, p.Books[0].CoverHash)
		}
		if !strings.HasPrefix(p.Books[0].CoverURL, "/api/v1/files/") {
			t.Fatalf("cover url %q", p.Books[0].CoverURL)
		}
	}

	t.Run("distance 0 lists only equal hashes", func(t *testing.T) {
		if err := e.st.PutSettings(e.ctx, map[string]string{"samebook.cover_distance": "0"}); err != nil {
			t.Fatal(err)
		}
		defer e.st.PutSettings(e.ctx, map[string]string{"samebook.cover_distance": "6"})
		if got := e.similarCovers(t); len(got) != 0 {
			t.Fatalf("distance 0: %v", pairNames(got))
		}
	})

	t.Run("bad input", func(t *testing.T) {
		cur := func(s string) string { return url.QueryEscape(base64.RawURLEncoding.EncodeToString([]byte(s))) }
		for _, bad := range []string{"nope", cur(`{"d":1,"a":5,"b":5}`), cur(`{"d":1,"a":0,"b":5}`), cur(`{"d":-1,"a":1,"b":5}`),
			cur(`{"d":1,"a":1,"b":5,"x":1}`), cur(`{"d":"1","a":1,"b":5}`), cur(`[]`)} {
			e.expect(e.call("GET", "/api/v1/duplicates/covers?cursor="+bad, ""), 400, "invalid_cursor")
		}
		for _, bad := range []string{"0", "-1", "x", "1001", "1e3"} {
			e.expect(e.call("GET", "/api/v1/duplicates/covers?limit="+bad, ""), 400, "invalid_limit")
		}
		e.expect(e.callAuth("GET", "/api/v1/duplicates/covers", "", ""), 401, "")
		e.expect(e.callAuth("GET", "/api/v1/duplicates/covers", "", "Bearer wrong"), 401, "")
	})
}
