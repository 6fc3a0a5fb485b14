package web_test

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// dragonBooks is how many books of the series "Dragon" writeSearchBooks
// writes: more than one page of the search page's lists (20).
const dragonBooks = 21

// writeSearchBooks writes the books of series "Dragon" (no title) and
// "Quiet/Quiet 01.cbz", whose ComicInfo title is "Dragon Tales": all of
// them match "dragon", the series by name, Quiet 01 by its title only.
func writeSearchBooks(t *testing.T, lib string) {
	t.Helper()
	books := map[string]fixtures.Book{
		"Quiet/Quiet 01.cbz": {Pages: 1, Info: &fixtures.ComicInfo{Series: "Quiet", Number: "1", Title: "Dragon Tales"}},
	}
	for i := 1; i <= dragonBooks; i++ {
		books[fmt.Sprintf("Dragon/Dragon %02d.cbz", i)] = fixtures.Book{Pages: 1,
			Info: &fixtures.ComicInfo{Series: "Dragon", Number: fmt.Sprint(i)}}
	}
	for rel, b := range books {
		files, err := b.Files()
		if err != nil {
			t.Fatal(err)
		}
		data, err := fixtures.Zip(files, zip.Store)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(lib, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSearchPage searches real books in Chromium through the real
// controld and workerd: typing shows books and series, "More books"
// follows the cursor to the last book without repeating one, a book opens
// in the reader and a series in Browse, a query of no words is refused
// with the API's reason and a query without results says so. The one
// book whose title matches comes first (the API ranks it).
func TestSearchPage(t *testing.T) {
	buildWorkerd(t)
	e := setup(t)
	lib := filepath.Join(e.Root, "comics")
	writeSearchBooks(t, lib)
	if code, _ := e.call(t, "POST", "/libraries", map[string]any{"name": "Comics", "path": lib}); code != 201 {
		t.Fatalf("create library: %d", code)
	}
	if code, _ := e.call(t, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": 1}); code != 201 {
		t.Fatalf("scan: %d", code)
	}
	e.startWorkerd(t, t)
	waitAPI(t, e, "every book indexed", func() bool {
		_, page := e.call(t, "GET", "/search?q=dragon&limit=100", nil)
		items, _ := page["items"].([]any)
		return len(items) == dragonBooks+1
	})
	ctx := browser(t)

	books := `document.querySelectorAll('#search-books li[data-file-id]')`
	run(t, ctx, "sign in and search", chromedp.Navigate(e.URL+"/#/overview"), chromedp.WaitVisible(chromedp.ID("signin")),
		fill("#token", testToken), chromedp.Click(chromedp.CSS("#signin-form button")),
		waitJS(`document.body.dataset.page === "overview"`), page("search"),
		fill("#search-q", "drag"), waitJS(`document.querySelector('#search-results')?.dataset.state === "results"`),
		waitJS(books+`.length === 20`), waitJS(`document.querySelector('#search-series')?.dataset.count === "1"`))
	if first := eval[string](t, ctx, books+`[0].querySelector('a.read').textContent`); first != "Quiet 01.cbz" {
		t.Errorf("the book whose title matches is not first: %s", first)
	}
	if got := eval[string](t, ctx, `location.hash`); got != "#/search?q=drag" {
		t.Errorf("the query is not in the URL: %s", got)
	}

	run(t, ctx, "more books", chromedp.Click(chromedp.CSS(`#search-books .more button`)),
		waitJS(books+`.length === `+fmt.Sprint(dragonBooks+1)), waitJS(`document.querySelector('#search-books .more').hidden`),
		e.shot("search"))
	ids := eval[[]string](t, ctx, `[...`+books+`].map((li) => li.dataset.fileId)`)
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("book %s is listed twice: %v", id, ids)
		}
		seen[id] = true
	}

	run(t, ctx, "a query of no words", fill("#search-q", "!!!"),
		waitJS(`document.querySelector('#search-results')?.dataset.state === "invalid"`))
	if msg := eval[string](t, ctx, `document.querySelector('#search-msg [role=alert]').textContent`); msg != "This search cannot be run: q has no letters or digits." {
		t.Errorf("invalid query says %q", msg)
	}
	if eval[string](t, ctx, `document.querySelector('#search-q').getAttribute('aria-invalid')`) != "true" {
		t.Error("the box is not marked invalid")
	}

	run(t, ctx, "no results", fill("#search-q", "zebra"),
		waitJS(`document.querySelector('#search-results')?.dataset.state === "empty"`))
	if msg := eval[string](t, ctx, `document.querySelector('#search-msg').textContent`); msg != "Nothing matches “zebra”." {
		t.Errorf("no results says %q", msg)
	}

	run(t, ctx, "open a series", fill("#search-q", "dragon"), chromedp.KeyEvent("\r"),
		waitJS(`document.querySelector('#search-series a.series')`), chromedp.Click(chromedp.CSS(`#search-series a.series`)),
		waitJS(`document.body.dataset.page === "browse"`), waitJS(`document.querySelector('#files-title')?.textContent === "Dragon"`),
		waitJS(`document.querySelectorAll('#file-grid .card').length === `+fmt.Sprint(dragonBooks)))

	run(t, ctx, "back to the results, open a book", chromedp.NavigateBack(),
		waitJS(`document.body.dataset.page === "search"`), waitJS(books+`.length === 20`),
		chromedp.Click(chromedp.CSS(`#search-books li[data-file-id] a.read`)), waitJS(`document.body.dataset.page === "read"`),
		waitJS(`document.querySelector('.reader-page[data-state="ready"] img')?.naturalWidth > 0`))
}
