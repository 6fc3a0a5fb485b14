package web_test

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// writeReaderBooks writes two real books: "Plain 01" (7 pages, page 4 a
// wide double spread, page 6 not an image at all) and "Manga 01" (3
// pages, ComicInfo Manga=YesAndRightToLeft).
func writeReaderBooks(t *testing.T, lib string) {
	t.Helper()
	narrow, err := fixtures.Pages(7, fixtures.PageOptions{W: 60, H: 90})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := fixtures.Pages(1, fixtures.PageOptions{W: 120, H: 90, NameFormat: "page 4", Seed: 40})
	if err != nil {
		t.Fatal(err)
	}
	plain := append(append([]fixtures.File{}, narrow[:3]...), wide[0])
	plain = append(plain, narrow[4], fixtures.File{Name: "page 6.jpg", Data: []byte("this is not a JPEG")}, narrow[6])
	plain = append(plain, fixtures.File{Name: "ComicInfo.xml", Data: fixtures.ComicInfo{Series: "Plain", Number: "1"}.XML()})
	manga := fixtures.Book{Pages: 3, Info: &fixtures.ComicInfo{Series: "Manga", Number: "1", Manga: "YesAndRightToLeft"}}
	mangaFiles, err := manga.Files()
	if err != nil {
		t.Fatal(err)
	}
	for rel, files := range map[string][]fixtures.File{"Plain/Plain 01.cbz": plain, "Manga/Manga 01.cbz": mangaFiles} {
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

// scanBooks adds the library, scans it with the real workerd and returns
// the file ids by series name once both books have their pages counted.
func scanBooks(t *testing.T, e *env, lib string) map[string]string {
	t.Helper()
	if code, _ := e.call(t, "POST", "/libraries", map[string]any{"name": "Comics", "path": lib}); code != 201 {
		t.Fatalf("create library: %d", code)
	}
	if code, _ := e.call(t, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": 1}); code != 201 {
		t.Fatalf("scan: %d", code)
	}
	e.startWorkerd(t, t)
	ids := map[string]string{}
	waitAPI(t, e, "both books scanned", func() bool {
		_, page := e.call(t, "GET", "/files?library_id=1&limit=10", nil)
		items, _ := page["items"].([]any)
		for _, it := range items {
			f := it.(map[string]any)
			if f["total_pages"] != nil {
				ids[strings.Split(f["relative_path"].(string), "/")[0]] = fmt.Sprint(f["id"])
			}
		}
		return len(ids) == 2
	})
	return ids
}

// readerKey creates a reader user with access to the library and returns
// an API key of theirs.
func readerKey(t *testing.T, e *env) string {
	t.Helper()
	code, u := e.call(t, "POST", "/users", map[string]any{"name": "ann", "password": "correct horse", "library_ids": []int{1}})
	if code != 201 {
		t.Fatalf("create user: %d %v", code, u)
	}
	code, k := e.call(t, "POST", fmt.Sprintf("/users/%v/api-keys", u["id"]), map[string]any{"name": "dashboard"})
	if code != 201 {
		t.Fatalf("create key: %d %v", code, k)
	}
	return k["key"].(string)
}

func shown(sel string) string {
	return `document.querySelector('#reader-stage')?.dataset.pages === "` + sel + `"`
}

// TestReader reads real books in Chromium through the real controld and
// workerd: keys, click zones and the slider, prefetch at the viewport's width, a wide
// page alone in two-page mode, right-to-left manga, a broken page shown
// as an error, and progress saved for the reader user and restored.
func TestReader(t *testing.T) {
	buildWorkerd(t)
	e := setup(t)
	lib := filepath.Join(e.Root, "comics")
	writeReaderBooks(t, lib)
	ids := scanBooks(t, e, lib)
	key := readerKey(t, e)
	ctx := browser(t)
	var net netlog
	net.listen(t, ctx)
	plain := `#file-grid .card[data-file-id="` + ids["Plain"] + `"]`

	run(t, ctx, "open from Browse", chromedp.Navigate(e.URL+"/#/browse"), chromedp.WaitVisible(chromedp.ID("signin")),
		fill("#token", testToken), chromedp.Click(chromedp.CSS("#signin-form button")),
		waitJS(`document.body.dataset.page === "browse"`), waitJS(`document.querySelector('`+plain+` a.read')`),
		chromedp.Click(chromedp.CSS(plain+` a.read`)), waitJS(`document.body.dataset.page === "read"`),
		waitJS(shown("1")), waitJS(`document.querySelector('.reader-page[data-state="ready"] img')?.naturalWidth > 0`))
	reqs, _ := net.snapshot()
	prefetched := 0
	for _, r := range reqs {
		if strings.Contains(r, "/files/"+ids["Plain"]+"/pages/") && strings.Contains(r, "width=") &&
			(strings.Contains(r, "/pages/2?") || strings.Contains(r, "/pages/3?")) {
			prefetched++
		}
	}
	if prefetched < 2 {
		t.Errorf("pages 2 and 3 were not prefetched with ?width=; requests: %v", reqs)
	}

	run(t, ctx, "keys", chromedp.KeyEvent(kb.ArrowRight), waitJS(shown("2")), chromedp.KeyEvent(" "), waitJS(shown("3")),
		chromedp.KeyEvent(kb.ArrowLeft), waitJS(shown("2")), chromedp.KeyEvent(kb.End), waitJS(shown("7")),
		setValue("#reader-slider", "5"), waitJS(shown("5")), waitJS(`document.querySelector('#reader-where').textContent === "Page 5 of 7"`),
		chromedp.KeyEvent(kb.Home), waitJS(shown("1")))
	run(t, ctx, "click zones", chromedp.MouseClickXY(1200, 400), waitJS(shown("2")),
		chromedp.MouseClickXY(60, 400), waitJS(shown("1")), chromedp.MouseClickXY(640, 400))
	if got := eval[string](t, ctx, `document.querySelector('#reader-stage').dataset.pages`); got != "1" {
		t.Errorf("a click in the middle third turned to %s", got)
	}

	run(t, ctx, "two pages: the wide page alone", chromedp.Click(chromedp.ID("reader-spread")), waitJS(shown("1")),
		chromedp.KeyEvent(kb.ArrowRight), waitJS(shown("2,3")), chromedp.KeyEvent(kb.ArrowRight), waitJS(shown("4")),
		chromedp.KeyEvent(kb.ArrowRight), waitJS(shown("5,6")), e.shot("reader-spread"))
	run(t, ctx, "a broken page is an error", waitJS(`document.querySelector('.reader-page[data-page="6"][data-state="failed"] [role=alert]')`))
	msg := eval[string](t, ctx, `document.querySelector('.reader-page[data-page="6"]').textContent`)
	if !strings.Contains(msg, "Page 6 could not load") {
		t.Errorf("broken page says %q", msg)
	}

	run(t, ctx, "read as a user", fill("#reader-key", key), chromedp.Click(chromedp.CSS("#reader-key-form button")),
		waitJS(`document.querySelector('.reader')?.dataset.restored === "0"`),
		chromedp.KeyEvent(kb.ArrowRight), waitJS(shown("7")), waitJS(`document.querySelector('.reader')?.dataset.saved === "7"`))
	checkProgress(t, e, key, ids["Plain"], 7)

	run(t, ctx, "restored on reopen", chromedp.Navigate(e.URL+"/#/browse"), waitJS(`document.body.dataset.page === "browse"`),
		chromedp.Navigate(e.URL+"/#/read?file="+ids["Plain"]), waitJS(`document.querySelector('.reader[aria-label$="Plain 01.cbz"]')`),
		waitJS(`document.querySelector('.reader')?.dataset.restored === "7"`), waitJS(shown("7")))

	run(t, ctx, "manga reads right to left", chromedp.Navigate(e.URL+"/#/read?file="+ids["Manga"]),
		waitJS(`document.querySelector('.reader[aria-label$="Manga 01.cbz"] #reader-stage[data-dir="rtl"]')`), waitJS(shown("1")),
		chromedp.KeyEvent(kb.ArrowLeft), waitJS(shown("2")), chromedp.KeyEvent(kb.ArrowRight), waitJS(shown("1")),
		chromedp.MouseClickXY(60, 400), waitJS(shown("2")), chromedp.Click(chromedp.ID("reader-spread")), waitJS(shown("2,3")),
		waitJS(`getComputedStyle(document.querySelector('#reader-stage')).flexDirection === "row-reverse"`), e.shot("reader-manga"))
}

// checkProgress asks the API, as the reader user, where they are.
func checkProgress(t *testing.T, e *env, key, id string, want int) {
	t.Helper()
	req, _ := newKeyRequest(e.URL+"/api/v1/me/progress/"+id, key)
	body := doJSON(t, req)
	if fmt.Sprint(body["page"]) != fmt.Sprint(want) || body["completed"] != true {
		t.Errorf("progress of the reader user: %v, want page %d completed", body, want)
	}
}

func newKeyRequest(url, key string) (*http.Request, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err == nil {
		req.Header.Set("X-API-Key", key)
	}
	return req, err
}

func doJSON(t *testing.T, req *http.Request) map[string]any {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
		t.Fatalf("%s: %d %v", req.URL, res.StatusCode, err)
	}
	return out
}
