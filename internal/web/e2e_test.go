package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// call sends one API request from Go (the "other client" of the tests).
func (e *env) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, e.URL+"/api/v1"+path, rd)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// netlog records every request the page makes and the bytes received.
type netlog struct {
	mu       sync.Mutex
	requests []string // "METHOD path?query"
	received float64  // encoded bytes (headers + body as sent on the wire)
}

func (n *netlog) listen(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Listen(ctx, func(ev any) {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u, err := url.Parse(ev.Request.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
				n.requests = append(n.requests, ev.Request.Method+" "+u.RequestURI())
			}
		case *network.EventLoadingFinished:
			n.received += ev.EncodedDataLength
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (n *netlog) snapshot() ([]string, float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.requests...), n.received
}

// clickText clicks the first element matching sel whose text is text.
func clickText(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
			const el = [...document.querySelectorAll(%q)].find((e) => e.textContent.trim() === %q);
			if (!el) return false;
			el.click();
			return true;
		})()`, sel, text))(ctx, tg)
		if err == nil && !ok {
			err = fmt.Errorf("no %s with text %q", sel, text)
		}
		return err
	})
}

// page navigates by the nav bar and waits until the page has rendered.
func page(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Click(chromedp.CSS(`#nav a[href="#/`+name+`"]`)),
		waitJS(`document.body.dataset.page === "`+name+`"`))
}

// fill clears a text field and types value into it, key by key.
func fill(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(setValue(sel, ""), chromedp.SendKeys(chromedp.CSS(sel), value))
}

// setValue sets a field's value and fires input and change events, as a
// person picking an option does.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
			const el = document.querySelector(%q);
			if (!el) return false;
			el.value = %q;
			el.dispatchEvent(new Event('input', {bubbles: true}));
			el.dispatchEvent(new Event('change', {bubbles: true}));
			return el.value === %q;
		})()`, sel, value, value))(ctx, tg)
		if err == nil && !ok {
			err = fmt.Errorf("cannot set %s to %q", sel, value)
		}
		return err
	})
}

// TestDashboard drives the dashboard in headless Chromium against the real
// admin API on a real database: sign-in (wrong token first), every page,
// library validation and creation, a library's media switched (and a
// switch the API refuses), jobs requested, watched live and
// cancelled, settings saved, kept across a reload and refused per key,
// maintenance requests. Every request the UI made must be a route of the
// API. A screenshot of each page goes to artifacts/screenshots/.
func TestDashboard(t *testing.T) {
	e := setup(t)
	ctx := browser(t)
	var net netlog
	net.listen(t, ctx)
	lib := filepath.Join(e.Root, "comics")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := fixtures.Library(lib, fixtures.LibrarySpec{Files: 6, Broken: 1}); err != nil {
		t.Fatal(err)
	}

	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}
	step("sign in", func(t *testing.T) {
		run(t, ctx, "open", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.ID("signin")))
		if n := eval[int](t, ctx, `document.querySelectorAll('#page *').length`); n != 0 {
			t.Fatalf("signed out, yet the page shows %d elements", n)
		}
		run(t, ctx, "wrong token", fill("#token", "not-the-token-0123456789"),
			chromedp.Click(chromedp.CSS("#signin-form button")),
			waitJS(`document.getElementById('signin-error').textContent !== ''`), e.shot("01-signin-wrong-token"))
		msg := eval[string](t, ctx, `document.getElementById('signin-error').textContent`)
		if !strings.Contains(msg, "Wrong token") || !strings.Contains(msg, "401") {
			t.Errorf("wrong-token message %q", msg)
		}
		if eval[bool](t, ctx, `sessionStorage.length > 0 || !document.getElementById('nav').hidden`) {
			t.Error("a refused token was kept, or the navigation shown")
		}
		run(t, ctx, "right token", fill("#token", testToken), chromedp.Click(chromedp.CSS("#signin-form button")),
			waitJS(`document.body.dataset.page === "overview"`),
			waitJS(`document.getElementById('live').textContent === 'live'`), e.shot("02-overview-empty"))
		if got := eval[string](t, ctx, `sessionStorage.getItem('bindery.token')`); got != testToken {
			t.Errorf("sessionStorage token %q", got)
		}
		// Budget of the issue: first load of the overview ≤ 150 KB on the
		// wire (cold cache: sign-in page, sign-in, overview and its API
		// calls), interactive within 1 s on loopback.
		_, received := net.snapshot()
		t.Logf("first load, cold cache, through the overview: %.1f KB transferred", received/1024)
		if received > 150*1024 {
			t.Errorf("first load transferred %.0f bytes, over 150 KB", received)
		}
		run(t, ctx, "reload", chromedp.Reload(), waitJS(`document.body.dataset.page === "overview"`))
		ms := eval[int](t, ctx, `Number(document.body.dataset.readyMs)`)
		t.Logf("overview rendered with data %d ms after navigation start (reload, warm cache)", ms)
		if ms > 3000 { // 1 s on an idle machine; the test machine is shared
			t.Errorf("overview took %d ms to render", ms)
		}
	})

	step("libraries", func(t *testing.T) {
		run(t, ctx, "open", page("libraries"))
		cases := []struct{ path, code string }{
			{"/etc", "path_outside_library_root"},
			{filepath.Join(e.Root, "nope"), "path_not_found"},
			{filepath.Join(e.Root, "..", filepath.Base(e.Root), "..", "x"), "path_outside_library_root"},
		}
		for _, c := range cases {
			run(t, ctx, "bad path "+c.path, fill("#lib-name", "Comics"), fill("#lib-path", c.path),
				chromedp.Click(chromedp.CSS("#add-library button[type=submit]")),
				waitJS(`document.getElementById('lib-path-error').textContent.includes('`+c.code+`')`))
			if inv := eval[string](t, ctx, `document.getElementById('lib-path').getAttribute('aria-invalid')`); inv != "true" {
				t.Errorf("%s: path not marked invalid", c.path)
			}
		}
		run(t, ctx, "shot", e.shot("03-libraries-path-error"))
		if status, body := e.call(t, "GET", "/libraries", nil); status != 200 || len(body["items"].([]any)) != 0 {
			t.Fatalf("a refused path created a library: %d %v", status, body)
		}
		run(t, ctx, "add", fill("#lib-name", "Comics"), fill("#lib-path", lib),
			chromedp.Click(chromedp.CSS("#add-library button[type=submit]")),
			waitJS(`document.querySelector('#libraries tr[data-library-id]')`))
		if got := eval[string](t, ctx, `document.getElementById('lib-path-error').textContent`); got != "" {
			t.Errorf("error left after a good path: %q", got)
		}
		run(t, ctx, "scan now", clickText("#libraries tr[data-library-id] button", "Scan now"),
			waitJS(`/scan job \d+ started/.test(document.querySelector('#libraries tr[data-library-id] .msg').textContent)`),
			clickText("#libraries tr[data-library-id] button", "Scan now"),
			waitJS(`/already pending/.test(document.querySelector('#libraries tr[data-library-id] .msg').textContent)`),
			e.shot("04-libraries"))
		checkMediaSwitch(t, ctx, e)
	})

	var scanID int64
	step("overview follows the event stream", func(t *testing.T) {
		_, jobs := e.call(t, "GET", "/jobs?kind=scan", nil)
		items := jobs["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("want one scan job, got %v", jobs)
		}
		scanID = int64(items[0].(map[string]any)["id"].(float64))
		sel := fmt.Sprintf(`#active-jobs [data-job-id="%d"]`, scanID)
		// A hash request waits in the queue behind the pending scan; the
		// overview lists it and can remove it.
		status, q := e.call(t, "POST", "/jobs", map[string]any{"kind": "hash", "library_id": 1})
		if status != 202 {
			t.Fatalf("hash behind a pending scan: %d %v, want 202 queued", status, q)
		}
		run(t, ctx, "open", page("overview"), waitJS(`document.querySelector('`+sel+`[data-status="pending"]')`),
			waitJS(`document.querySelector('#queue li[data-queue-id]')`),
			clickText("#queue li button", "Remove"), waitJS(`!document.querySelector('#queue li[data-queue-id]')`))
		if _, q := e.call(t, "GET", "/queue", nil); len(q["items"].([]any)) != 0 {
			t.Fatalf("queue after Remove: %v", q)
		}
		reqsBefore, _ := net.snapshot()
		// Another client cancels the job: the overview must learn it from
		// GET /events without reloading the job list.
		if status, _ := e.call(t, "POST", fmt.Sprintf("/jobs/%d/cancel", scanID), nil); status != 200 {
			t.Fatalf("cancel: %d", status)
		}
		run(t, ctx, "cancelled live", waitJS(`document.querySelector('`+sel+`[data-status="cancelled"]')`), e.shot("05-overview"))
		reqs, _ := net.snapshot()
		for _, r := range reqs[len(reqsBefore):] {
			if strings.HasPrefix(r, "GET /api/v1/jobs") {
				t.Errorf("the overview fetched %s after the change: updates must come from the event stream", r)
			}
		}
	})

	step("jobs", func(t *testing.T) {
		if status, _ := e.call(t, "POST", "/jobs", map[string]any{"kind": "hash", "library_id": 1}); status != 201 {
			t.Fatalf("hash request: %d", status)
		}
		// The overview says which pass the hash is in, and that a scan
		// requested behind it is waiting for it to yield.
		status, q := e.call(t, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": 1})
		if status != 202 {
			t.Fatalf("scan behind a pending hash: %d %v, want 202 queued", status, q)
		}
		run(t, ctx, "hash phase", page("libraries"), page("overview"),
			waitJS(`(() => { const p = document.querySelector('#active-jobs [data-status="pending"] .hash-phase');
				return p && p.querySelector('[data-phase="backfill"]') && p.textContent.includes('scan waiting'); })()`))
		if status, _ := e.call(t, "DELETE", fmt.Sprintf("/queue/%d", int64(q["queued"].(map[string]any)["id"].(float64))), nil); status != 204 {
			t.Fatalf("unqueue the scan: %d", status)
		}
		run(t, ctx, "open", page("jobs"), waitJS(`document.querySelectorAll('#jobs tr[data-job-id]').length === 2`))
		run(t, ctx, "filter", setValue("#f-status", "cancelled"),
			waitJS(`document.body.dataset.page === 'jobs' && location.hash.includes('status=cancelled')`),
			waitJS(`document.querySelectorAll('#jobs tr[data-job-id]').length === 1`))
		if id := eval[string](t, ctx, `document.querySelector('#jobs tr[data-job-id]').dataset.jobId`); id != fmt.Sprint(scanID) {
			t.Errorf("status filter shows job %s, want %d", id, scanID)
		}
		run(t, ctx, "unfilter", setValue("#f-status", ""),
			waitJS(`!location.hash.includes('status=') && document.querySelectorAll('#jobs tr[data-job-id]').length === 2`),
			clickText(`#jobs tr[data-status="pending"] button`, "Details"),
			waitJS(`document.querySelector('#job-detail h2')`),
			e.shot("06-jobs-detail"),
			clickText("#job-detail button", "Cancel job"),
			waitJS(`document.querySelector('#jobs tr[data-status="cancelled"]') && !document.querySelector('#jobs tr[data-status="pending"]')`))
		if _, j := e.call(t, "GET", "/jobs?status=pending", nil); len(j["items"].([]any)) != 0 {
			t.Errorf("cancel from the UI left pending jobs: %v", j)
		}
	})

	step("browse", func(t *testing.T) {
		run(t, ctx, "open", page("browse"), waitJS(`document.querySelector('#files p.hint')`), e.shot("07-browse"))
		if got := eval[string](t, ctx, `document.querySelector('#browse-library option:checked').textContent`); got != "Comics" {
			t.Errorf("library select shows %q", got)
		}
	})

	step("duplicates", func(t *testing.T) {
		run(t, ctx, "open", page("duplicates"), e.shot("08-duplicates"))
		if !eval[bool](t, ctx, `document.querySelector('#main [role=status]').textContent.startsWith('No duplicates')`) {
			t.Error("empty duplicates page lacks its message")
		}
		if got := eval[string](t, ctx, `document.getElementById('dup-search').textContent`); !strings.HasPrefix(got, "complete") {
			t.Errorf("with nothing to hash the search says %q, want complete", got)
		}
	})

	step("a cover that crashed workerd is listed", func(t *testing.T) {
		// As recovery leaves it after the third dead worker (leases.MaxRecoveries).
		now := protocol.FormatTime(e.Store.Now())
		for _, q := range []string{
			`INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, created_at, updated_at)
				VALUES (900, 1, 'Poison/Poison 01.cbz', 1, 1, ?1, ?1)`,
			`INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, error_code, error_message,
				recovered_count, finished_at, created_at, updated_at)
				VALUES (900, 1, 'library:1', 'failed', 'covers/132/900.webp', 'render_crashed', 'the worker died 3 times', 3, ?1, ?1, ?1)`,
		} {
			if _, err := storetest.Exec(context.Background(), e.Store, q, now); err != nil {
				t.Fatal(err)
			}
		}
		run(t, ctx, "open", page("browse"), page("overview"),
			waitJS(`[...document.querySelectorAll('#thumb-metrics .crashed li')].some((li) => li.textContent.includes('Poison/Poison 01.cbz'))`),
			e.shot("06b-crashed-cover"))
	})

	step("settings", func(t *testing.T) {
		run(t, ctx, "open", page("settings"))
		n := eval[int](t, ctx, `document.querySelectorAll('#settings .setting').length`)
		if n != len(settings.Definitions()) {
			t.Errorf("%d settings shown, want %d", n, len(settings.Definitions()))
		}
		if d := eval[string](t, ctx, `document.getElementById('set-jobs-retention_hours-default').textContent`); !strings.Contains(d, "Default: 24") {
			t.Errorf("default text %q", d)
		}
		run(t, ctx, "save", fill("#set-jobs-retention_hours", "48"), setValue("#set-scan-cover-format", "jpeg"),
			chromedp.Click(chromedp.CSS(`#settings button[type=submit]`)),
			waitJS(`document.getElementById('settings-status').textContent.startsWith('Saved 2')`))
		run(t, ctx, "reload", chromedp.Reload(), waitJS(`document.body.dataset.page === 'settings'`))
		if v := eval[string](t, ctx, `document.getElementById('set-jobs-retention_hours').value + ' ' + document.getElementById('set-scan-cover-format').value`); v != "48 jpeg" {
			t.Errorf("after reload: %q, want 48 jpeg", v)
		}
		run(t, ctx, "bad value", fill("#set-scan-cover-width", "9999"), fill("#set-jobs-retention_hours", "72"),
			chromedp.Click(chromedp.CSS(`#settings button[type=submit]`)),
			waitJS(`document.getElementById('set-scan-cover-width-error').textContent !== ''`), e.shot("09-settings-error"))
		if inv := eval[string](t, ctx, `document.getElementById('set-scan-cover-width').getAttribute('aria-invalid')`); inv != "true" {
			t.Error("bad setting not marked invalid")
		}
		if msg := eval[string](t, ctx, `document.getElementById('set-scan-cover-width-error').textContent`); !strings.Contains(msg, "invalid_setting_value") {
			t.Errorf("error %q", msg)
		}
		vals, err := settings.Load(context.Background(), e.Store)
		if err != nil {
			t.Fatal(err)
		}
		if vals.Int(settings.JobsRetentionHours) != 48 || vals.Int(settings.ScanCoverWidth) != 320 || vals.Enum(settings.ScanCoverFormat) != "jpeg" {
			t.Errorf("database after a refused save: retention %d width %d format %s (want 48, 320, jpeg: all or nothing)",
				vals.Int(settings.JobsRetentionHours), vals.Int(settings.ScanCoverWidth), vals.Enum(settings.ScanCoverFormat))
		}
	})

	step("maintenance", func(t *testing.T) {
		run(t, ctx, "open", page("maintenance"),
			setValue("#wal-mode", "truncate"),
			chromedp.Click(chromedp.CSS("#wal-form button[type=submit]")),
			// The scheduler may have requested one already: then the
			// active one is shown instead of a duplicate.
			waitJS(`/Checkpoint \d+ (requested \(truncate\)|is already (pending|running))/.test(document.getElementById('wal-form-result').textContent)`),
			waitJS(`document.querySelector('#checkpoints tbody tr')`),
			chromedp.Click(chromedp.CSS("#recover-form button[type=submit]")),
			waitJS(`document.getElementById('recover-form-result').textContent.startsWith('Recovered 0')`),
			fill("#cleanup-key", "bogus"),
			chromedp.Click(chromedp.CSS("#cleanup-form button[type=submit]")),
			waitJS(`document.getElementById('cleanup-form-result').textContent.includes('invalid_group_key')`),
			fill("#cleanup-key", "library:1"),
			chromedp.Click(chromedp.CSS("#cleanup-form button[type=submit]")),
			waitJS(`document.getElementById('cleanup-form-result').textContent.startsWith('Cleanup ')`),
			e.shot("10-maintenance"))
		_, latest := e.call(t, "GET", "/maintenance/wal-checkpoint/latest", nil)
		if got := eval[string](t, ctx, `document.getElementById('wal-form-result').textContent`); !strings.Contains(got, fmt.Sprintf("Checkpoint %v ", latest["id"])) {
			t.Errorf("result %q does not name the latest checkpoint %v", got, latest["id"])
		}
		run(t, ctx, "overview shows the checkpoint", page("overview"),
			waitJS(`document.getElementById('wal-latest').textContent.includes('`+latest["mode"].(string)+`')`))
	})

	step("mobile width", func(t *testing.T) {
		run(t, ctx, "narrow", chromedp.EmulateViewport(390, 844), page("libraries"), e.shot("11-libraries-phone"))
		if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390+1 {
			// Tables may scroll inside their wrapper; the page itself must not.
			t.Errorf("page is %d px wide on a 390 px screen", w)
		}
		run(t, ctx, "wide", chromedp.EmulateViewport(1280, 900))
	})

	step("every request is a documented API route", func(t *testing.T) {
		reqs, _ := net.snapshot()
		checkRequests(t, reqs, 15)
	})

	step("sign out", func(t *testing.T) {
		run(t, ctx, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
		if eval[bool](t, ctx, `sessionStorage.getItem('bindery.token') !== null || document.querySelectorAll('#page *').length > 0`) {
			t.Error("sign-out kept the token or the page")
		}
	})
}
