package api_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestCommonPages: a page in the books of five series (a credit page) is
// listed by /duplicates/pages with its counts and an image of it, and is
// left out when books are compared: a book and its copy with the credit
// page added are then the same pages, not a contains group. A page in
// four series is not common.
func TestCommonPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	const credit, ad = 200, 201
	var creditFirst int64
	for i := range 5 {
		id := e.digestedBook(lib, fmt.Sprintf("s%d/book.cbz", i), "zip", 1000+int64(i), credit, byte(10+i), byte(20+i))
		if i == 0 {
			creditFirst = id
		}
		pages := []byte{byte(30 + i)}
		if i < 4 {
			pages = append(pages, ad)
		}
		other := e.digestedBook(lib, fmt.Sprintf("s%d/other.cbz", i), "zip", 500, pages...)
		e.series(lib, fmt.Sprintf("S%d", i), id, other)
	}
	e.digestedBook(lib, "p.cbz", "zip", 900, 1, 2, 3)
	e.digestedBook(lib, "p credit.cb7", "7z", 950, credit, 1, 2, 3)

	var got []string
	cursor := ""
	for range 5 {
		r := e.call("GET", "/api/v1/duplicates/pages?limit=1&cursor="+url.QueryEscape(cursor), "")
		e.expect(r, 200, "")
		var p struct {
			Items []struct {
				Digest   string `json:"digest"`
				Books    int64  `json:"books"`
				Series   int64  `json:"series"`
				FileID   int64  `json:"example_file_id"`
				Page     int64  `json:"example_page"`
				ImageURL string `json:"image_url"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		r.decode(t, &p)
		for _, c := range p.Items {
			got = append(got, fmt.Sprintf("%s books=%d series=%d file=%v page=%d %s", c.Digest[:4], c.Books, c.Series,
				c.FileID == creditFirst, c.Page, strings.TrimPrefix(c.ImageURL, fmt.Sprintf("/api/v1/files/%d", c.FileID))))
		}
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	if want := "c8c8 books=6 series=5 file=true page=1 /pages/1"; len(got) != 1 || got[0] != want {
		t.Fatalf("common pages %q, want [%s]", got, want)
	}
	var kinds []string
	for _, g := range e.sameBookGroups(t) {
		kinds = append(kinds, fmt.Sprintf("%s:%d", g.Kind, len(g.Books)))
	}
	// The five series' books share only the credit page: no group.
	if want := "same_pages:2"; strings.Join(kinds, " ") != want {
		t.Fatalf("groups %v, want %s (the credit page ignored)", kinds, want)
	}
	e.expect(e.call("GET", "/api/v1/duplicates/pages?cursor=bm9wZQ", ""), 400, "invalid_cursor")
}
