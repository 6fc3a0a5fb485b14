package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestDashboardWatchAndFolderScan drives the libraries page: the watcher's
// state is shown, the watch mode is switched to poll (the API keeps it),
// one folder is scanned (the job names it) and a folder that climbs out
// is refused with the API's message.
func TestDashboardWatchAndFolderScan(t *testing.T) {
	e := setup(t)
	ctx := browser(t)
	dir := filepath.Join(e.Root, "comics")
	if err := os.MkdirAll(filepath.Join(dir, "Batman (2016)"), 0o755); err != nil {
		t.Fatal(err)
	}
	lib, err := e.Store.CreateLibrary(context.Background(), store.NewLibrary{Name: "comics", Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`#libraries tr[data-library-id="%d"]`, lib.ID)
	run(t, ctx, "sign in", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.ID("signin")),
		fill("#token", testToken), chromedp.Click(chromedp.CSS("#signin-form button")),
		waitJS(`document.body.dataset.page === "overview"`))
	run(t, ctx, "libraries shows the watcher", page("libraries"), chromedp.Reload(),
		waitJS(`document.body.dataset.page === "libraries"`),
		waitJS(`(document.querySelector('`+row+` .watcher')?.textContent || '').startsWith('inotify')`))
	run(t, ctx, "watch → poll", setValue(row+" select.watch", "poll"),
		waitJS(`document.querySelector('`+row+` .msg').textContent.includes('Watch: poll')`))
	got, err := e.Store.GetLibrary(context.Background(), lib.ID)
	if err != nil || got.Watch != "poll" {
		t.Fatalf("library after the switch: %+v, %v", got, err)
	}
	run(t, ctx, "folder that climbs out", fill(row+" input.scan-folder", "../x"),
		chromedp.Click(chromedp.CSS(row+" button.scan-folder-button")),
		waitJS(`document.querySelector('`+row+` .msg').textContent.includes('climbs out')`))
	run(t, ctx, "scan one folder", fill(row+" input.scan-folder", "Batman (2016)"),
		chromedp.Click(chromedp.CSS(row+" button.scan-folder-button")),
		waitJS(`/job \d+ started/.test(document.querySelector('`+row+` .msg').textContent)`), e.shot("libraries-watch"))
	payload, err := storetest.QueryText(context.Background(), e.Store, `SELECT payload FROM jobs WHERE kind = 'scan' ORDER BY id DESC LIMIT 1`)
	if err != nil || !strings.Contains(payload, `"Batman (2016)/"`) {
		t.Fatalf("scan job payload %q, %v", payload, err)
	}
}
