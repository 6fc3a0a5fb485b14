package web_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// coverPage is a cover page of real-looking art, JPEG at quality q.
func coverPage(t *testing.T, seed uint64, q int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, fixtures.CoverArt(600, 900, seed), &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeSameBooks writes the library of the Same book tab:
//   - Alpha 01 three times: stored, deflated (same pages: a same_pages
//     group) and with a credit page of its own at the end (contains);
//   - Beta 01 and a rescan whose cover page is the same picture at JPEG
//     quality 50 (other page bytes, so no group: similar covers);
//   - Gamma 01 and Delta 01, each also with one scanlator page shared by
//     both series (a common page once samebook.common_pages_min_series=2).
func writeSameBooks(t *testing.T, lib string) {
	t.Helper()
	pages := func(seed int, cover []byte) []fixtures.File {
		ps, err := fixtures.Pages(3, fixtures.PageOptions{W: 60, H: 90, Seed: seed, NameFormat: "page %d"})
		if err != nil {
			t.Fatal(err)
		}
		return append([]fixtures.File{{Name: "page 0.jpg", Data: cover}}, ps...)
	}
	with := func(fs []fixtures.File, extra ...fixtures.File) []fixtures.File {
		return append(append([]fixtures.File{}, fs...), extra...)
	}
	credit := func(seed int, name string) fixtures.File {
		b, err := fixtures.Image(fixtures.JPEG, 60, 90, seed)
		if err != nil {
			t.Fatal(err)
		}
		return fixtures.File{Name: name, Data: b}
	}
	alpha := pages(10, coverPage(t, 1, 90))
	beta := pages(20, coverPage(t, 2, 95))
	gamma, delta := pages(30, coverPage(t, 3, 90)), pages(40, coverPage(t, 4, 90))
	scanlator := credit(99, "zz scanlator.jpg")
	books := []struct {
		rel    string
		files  []fixtures.File
		method uint16
	}{
		{"Alpha/Alpha 01.cbz", alpha, zip.Store},
		{"Alpha/Alpha 01 (deflate).cbz", alpha, zip.Deflate},
		{"Alpha/Alpha 01 (credits).cbz", with(alpha, credit(77, "zz credits.jpg")), zip.Store},
		{"Beta/Beta 01.cbz", beta, zip.Store},
		{"Beta/Beta 01 (rescan).cbz", with(pages(20, coverPage(t, 2, 50))[:1], beta[1:]...), zip.Store},
		{"Gamma/Gamma 01.cbz", gamma, zip.Store},
		{"Gamma/Gamma 01 (scanlator).cbz", with(gamma, scanlator), zip.Store},
		{"Delta/Delta 01.cbz", delta, zip.Store},
		{"Delta/Delta 01 (scanlator).cbz", with(delta, scanlator), zip.Store},
	}
	for _, b := range books {
		data, err := fixtures.Zip(b.files, b.method)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(lib, filepath.FromSlash(b.rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// items is the items of an API list.
func items(t *testing.T, e *env, path string) []map[string]any {
	t.Helper()
	_, page := e.call(t, "GET", path, nil)
	raw, _ := page["items"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, it := range raw {
		out = append(out, it.(map[string]any))
	}
	return out
}

// TestSameBookTab scans real books with the real workerd (covers rendered
// and hashed, the candidates' pages digested) and reads the three reports
// in the Same book tab in Chromium: the same_pages and contains groups
// with their books and the differing page shown as an image, the common
// scanlator page with its image, and the one pair of similar covers (the
// rescan) with both covers loaded, and no pair for books already grouped.
func TestSameBookTab(t *testing.T) {
	buildWorkerd(t)
	e := setup(t)
	if err := e.Store.PutSettings(t.Context(), map[string]string{"samebook.common_pages_min_series": "2"}); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(e.Root, "comics")
	writeSameBooks(t, lib)
	if code, _ := e.call(t, "POST", "/libraries", map[string]any{"name": "Comics", "path": lib}); code != 201 {
		t.Fatalf("create library: %d", code)
	}
	if code, _ := e.call(t, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": 1}); code != 201 {
		t.Fatalf("scan: %d", code)
	}
	e.startWorkerd(t, t)
	kinds := func() map[string]int {
		out := map[string]int{}
		for _, g := range items(t, e, "/duplicates/books?limit=50") {
			out[fmt.Sprint(g["kind"])]++
		}
		return out
	}
	waitAPI(t, e, "groups, common page and covers settled", func() bool {
		_, m := e.call(t, "GET", "/thumbnails/metrics", nil)
		k := kinds()
		return fmt.Sprint(m["ready"]) == "9" && k["same_pages"] == 3 && k["contains"] == 1 && k["same_pages_by_index"] == 0 &&
			len(items(t, e, "/duplicates/pages")) == 1 && len(items(t, e, "/duplicates/covers")) == 1
	})
	pair := items(t, e, "/duplicates/covers")[0]
	books := pair["books"].([]any)
	names := []string{}
	for _, b := range books {
		names = append(names, b.(map[string]any)["relative_path"].(string))
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[Beta/Beta 01 (rescan).cbz Beta/Beta 01.cbz]" {
		t.Fatalf("similar covers: %v (distance %v)", names, pair["distance"])
	}

	ctx := browser(t)
	run(t, ctx, "sign in", chromedp.Navigate(e.URL+"/#/overview"), chromedp.WaitVisible(chromedp.ID("signin")),
		fill("#token", testToken), chromedp.Click(chromedp.CSS("#signin-form button")),
		waitJS(`document.body.dataset.page === "overview"`))
	run(t, ctx, "open the tab", page("samebook"),
		waitJS(`document.querySelector('#sb-groups')?.dataset.count === "4"`),
		waitJS(`document.querySelector('#sb-common')?.dataset.count === "1"`),
		waitJS(`document.querySelector('#sb-covers')?.dataset.count === "1"`))
	run(t, ctx, "images load",
		waitJS(`document.querySelector('.sb-group[data-kind="contains"] .sb-page[data-state="ready"] img')?.naturalWidth > 0`),
		waitJS(`document.querySelector('#sb-common .sb-page[data-state="ready"] img')?.naturalWidth > 0`),
		chromedp.ScrollIntoView(chromedp.CSS(".sb-pair")), // covers load lazily, once in view
		waitJS(`[...document.querySelectorAll('.sb-pair figure.cover img')].filter((i) => i.complete && i.naturalWidth > 0).length === 2`),
		e.shot("samebook"))

	contains := eval[string](t, ctx, `(() => {
		const g = document.querySelector('.sb-group[data-kind="contains"]');
		return [...g.querySelectorAll('.card .title')].map((e) => e.textContent).sort().join('|') + ' / ' +
			[...g.querySelectorAll('.sb-page')].map((f) => f.dataset.page + ':' + f.querySelector('figcaption').textContent).join('|');
	})()`)
	if contains != "Alpha 01 (credits).cbz|Alpha 01 (deflate).cbz|Alpha 01.cbz / 5:Alpha 01 (credits).cbz, page 5" {
		t.Errorf("contains group shows %q", contains)
	}
	facts := eval[string](t, ctx, `[...document.querySelectorAll('.sb-group[data-kind="contains"] .sb-facts')].map((e) => e.textContent).sort().join('|')`)
	if facts == "" || !bytes.Contains([]byte(facts), []byte("+0 at the start, +1 at the end")) || !bytes.Contains([]byte(facts), []byte("zip · ")) {
		t.Errorf("book facts %q lack the format, size, pages or the extra page", facts)
	}
	samePages := eval[string](t, ctx, `[...document.querySelectorAll('.sb-group[data-kind="same_pages"]')].map((g) =>
		[...g.querySelectorAll('.card .title')].map((e) => e.textContent).sort().join('+')).sort().join(' | ')`)
	want := "Alpha 01 (deflate).cbz+Alpha 01.cbz | Delta 01 (scanlator).cbz+Delta 01.cbz | Gamma 01 (scanlator).cbz+Gamma 01.cbz"
	if samePages != want {
		t.Errorf("same_pages groups %q, want %q", samePages, want)
	}
	pairText := eval[string](t, ctx, `document.querySelector('.sb-pair').textContent`)
	if !bytes.Contains([]byte(pairText), []byte("Beta 01 (rescan).cbz")) || !bytes.Contains([]byte(pairText), []byte("bits apart")) &&
		!bytes.Contains([]byte(pairText), []byte("bit apart")) {
		t.Errorf("similar covers pair shows %q", pairText)
	}
}
