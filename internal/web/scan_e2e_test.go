package web_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
)

var (
	workerdOnce sync.Once
	workerdBin  string
	workerdErr  error
)

// buildWorkerd builds cmd/workerd once per test binary.
func buildWorkerd(t *testing.T) string {
	t.Helper()
	workerdOnce.Do(func() {
		repo := testutil.RepoRoot(t)
		dir, err := os.MkdirTemp("", "web-workerd-")
		if err != nil {
			workerdErr = err
			return
		}
		workerdBin = filepath.Join(dir, "workerd")
		cmd := exec.Command("go", "build", "-o", workerdBin, "./cmd/workerd")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			workerdErr = fmt.Errorf("build workerd: %v\n%s", err, out)
		}
	})
	if workerdErr != nil {
		t.Fatal(workerdErr)
	}
	return workerdBin
}

// startWorkerd runs the real workerd on the test's database and state
// until owner (the whole test, not one step) ends.
func (e *env) startWorkerd(t, owner *testing.T) {
	t.Helper()
	bin := buildWorkerd(t)
	// A list of roots, the library's last: both daemons read it alike.
	roots := owner.TempDir() + "," + e.Root
	cmd := exec.Command(bin, "run", "--db", e.DB, "--state-dir", e.State, "--library-root", roots,
		"--worker-id", "web-test-worker", "--lease", "5s", "--thumbnail-concurrency", "2", "--shutdown-grace", "1s")
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BINDERY_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	owner.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if owner.Failed() {
			owner.Logf("workerd stderr:\n%s", stderr.String())
		}
	})
}

// sameContent groups the files under dir by content: the duplicate groups
// a correct hash pass must find (relative paths, sorted).
func sameContent(t *testing.T, dir string) [][]string {
	t.Helper()
	by := map[[32]byte][]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		by[sum] = append(by[sum], filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, g := range by {
		if len(g) > 1 {
			sort.Strings(g)
			out = append(out, g)
		}
	}
	return out
}

// TestScanLive is the whole story in a browser, with the real workerd in
// its own process: add a generated library (comics and a few real
// videos), press "Scan now", watch the job reach 100% on the overview
// through the event stream, browse the covers (rendered by workerd,
// fetched with the token, no layout shift), read what ffprobe found of
// the videos, find the duplicate group the hash job computed, resolve it,
// and switch the library to comics only.
func TestScanLive(t *testing.T) {
	tt := t
	buildWorkerd(t)
	e := setup(t)
	ctx := browser(t)
	var net netlog
	net.listen(t, ctx)
	lib := filepath.Join(e.Root, "comics")
	m, err := fixtures.Library(lib, fixtures.LibrarySpec{Files: 12, Broken: 1})
	if err != nil {
		t.Fatal(err)
	}
	var broken fixtures.LibraryFile
	for _, f := range m.Files {
		if f.ErrorCode != "" {
			broken = f
		}
	}
	first := filepath.Join(lib, filepath.FromSlash(m.Files[0].Path))
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "copy"+filepath.Ext(first)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	videos := writeVideos(t, lib)
	wantGroups := sameContent(t, lib)
	if len(wantGroups) == 0 {
		t.Fatal("the generated library has no duplicate")
	}
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}

	var jobID string
	step("scan now, watched live", func(t *testing.T) {
		run(t, ctx, "sign in", chromedp.Navigate(e.URL+"/#/libraries"), chromedp.WaitVisible(chromedp.ID("signin")),
			fill("#token", testToken), chromedp.Click(chromedp.CSS("#signin-form button")),
			waitJS(`document.body.dataset.page === "libraries"`),
			fill("#lib-name", "Comics"), fill("#lib-path", lib),
			chromedp.Click(chromedp.CSS("#add-library button[type=submit]")),
			waitJS(`document.querySelector('#libraries tr[data-library-id]')`),
			clickText("#libraries tr[data-library-id] button", "Scan now"),
			waitJS(`/scan job \d+ started/.test(document.querySelector('#libraries tr[data-library-id] .msg').textContent)`))
		jobID = eval[string](t, ctx, `document.querySelector('#libraries tr[data-library-id] .msg').textContent.match(/job (\d+)/)[1]`)
		sel := `#active-jobs [data-job-id="` + jobID + `"]`
		// The overview is open before any worker runs: everything that
		// follows reaches it through GET /events.
		run(t, ctx, "overview", page("overview"), waitJS(`document.querySelector('`+sel+`[data-status="pending"]')`))
		before, _ := net.snapshot()
		e.startWorkerd(t, tt)
		run(t, ctx, "progress to 100%", waitJS(`document.querySelector('`+sel+`[data-status="completed"]')`),
			waitJS(`document.querySelector('#workers [data-live="true"]')`), e.shot("20-overview-scan-done"))
		_, job := e.call(t, "GET", "/jobs/"+jobID, nil)
		total, processed := job["total_items"], job["processed_items"]
		want := "completed (100%)"
		if total != nil {
			want = fmt.Sprintf("%v / %v (100%%)", processed, total)
			if processed != total {
				t.Errorf("completed job reports %v of %v items", processed, total)
			}
		} else {
			// The engine writes progress on heartbeats only (every lease/3);
			// a scan shorter than that ends without figures.
			t.Logf("job %s completed before its first progress report (processed %v, total null)", jobID, processed)
		}
		bar := eval[string](t, ctx, `(() => { const p = document.querySelector('`+sel+` progress'); return p.value + '/' + p.max })()`)
		text := eval[string](t, ctx, `document.querySelector('`+sel+` .progress-text').textContent`)
		if bar != "100/100" || text != want {
			t.Errorf("progress bar %s, text %q; want 100/100 and %q", bar, text, want)
		}
		after, _ := net.snapshot()
		for _, r := range after[len(before):] {
			if strings.HasPrefix(r, "GET /api/v1/jobs") {
				t.Errorf("overview polled %s: progress must come from the event stream", r)
			}
		}
	})

	step("browse covers", func(t *testing.T) {
		// Covers and hashes are follow-ups of the scan: wait until the
		// API says they are done, then look at them in the browser.
		waitAPI(t, e, "covers rendered", func() bool {
			_, mt := e.call(t, "GET", "/thumbnails/metrics", nil)
			return mt["ready"].(float64) > 0 && mt["pending"].(float64) == 0 && mt["running"].(float64) == 0
		})
		_, mt := e.call(t, "GET", "/thumbnails/metrics", nil)
		ready := int(mt["ready"].(float64))
		run(t, ctx, "open", page("browse"), waitJS(`document.querySelectorAll('#file-grid .card').length === `+fmt.Sprint(len(m.Files)+1+len(videos))))
		boxes := `[...document.querySelectorAll('#file-grid .cover')].map((b) => b.getBoundingClientRect().height).join(',')`
		heightsBefore := eval[string](t, ctx, boxes)
		run(t, ctx, "scroll through", chromedp.Evaluate[chromedp.Void](`(async () => {
				for (const img of document.querySelectorAll('#file-grid img')) { img.scrollIntoView(); await new Promise((r) => setTimeout(r, 30)); }
				window.scrollTo(0, 0);
			})()`, chromedp.EvalAwaitPromise),
			waitJS(`[...document.querySelectorAll('#file-grid img')].every((i) => i.complete && i.naturalWidth > 0)`),
			e.shot("21-browse-covers"))
		if n := eval[int](t, ctx, `[...document.querySelectorAll('#file-grid img')].filter((i) => i.naturalWidth > 0).length`); n != ready {
			t.Errorf("%d covers rendered in the browser, the API has %d ready", n, ready)
		}
		if after := eval[string](t, ctx, boxes); after != heightsBefore {
			t.Errorf("cover boxes changed size as covers loaded:\n before %s\n after  %s", heightsBefore, after)
		}
		// Plain lazy images of signed URLs: no token in the URL, no fetch.
		if !eval[bool](t, ctx, `[...document.querySelectorAll('#file-grid img')].every((i) => {
				const u = new URL(i.src);
				return i.getAttribute('loading') === 'lazy' && /\/api\/v1\/files\/\d+\/cover$/.test(u.pathname) &&
					u.searchParams.get('sig') && u.searchParams.get('exp') && !i.src.includes('`+"token"+`');
			})`) {
			t.Error("covers are not lazy images of signed cover URLs")
		}
		name := filepath.Base(broken.Path)
		if !eval[bool](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#file-grid .card')].some((c) => c.querySelector('.title').textContent === %q && c.textContent.includes('broken'))`, name)) {
			t.Errorf("broken file %s has no broken badge", name)
		}
		if !eval[bool](t, ctx, fmt.Sprintf(`document.getElementById('scan-errors').textContent.includes(%q) && document.getElementById('scan-errors').textContent.includes(%q)`, broken.Path, broken.ErrorCode)) {
			t.Errorf("scan errors do not list %s (%s)", broken.Path, broken.ErrorCode)
		}
		// Render a cover again: the thumbnail event swaps it in place.
		id := eval[string](t, ctx, `document.querySelector('#file-grid .card').dataset.fileId`)
		_, f := e.call(t, "GET", "/files/"+id, nil)
		oldURL := f["cover"].(map[string]any)["url"].(string)
		run(t, ctx, "details", clickText("#file-grid .card button", "Details"), waitJS(`document.querySelector('dialog dl.kv')`),
			e.shot("22-file-details"),
			clickText("dialog button", "Render the cover again"),
			waitJS(`document.getElementById('regen-msg').textContent.startsWith('A new cover was requested')`),
			chromedp.Click(chromedp.CSS("dialog button[type=submit]")),
			waitJS(fmt.Sprintf(`(() => { const i = document.querySelector('#file-grid .card[data-file-id="%s"] img');
				return i && i.dataset.src !== %q && i.naturalWidth > 0; })()`, id, oldURL)))
		_, f = e.call(t, "GET", "/files/"+id, nil)
		newURL := f["cover"].(map[string]any)["url"].(string)
		if got := eval[string](t, ctx, `document.querySelector('#file-grid .card[data-file-id="`+id+`"] img').dataset.src`); got != newURL || newURL == oldURL {
			t.Errorf("after a new render the card shows %s; the API says %s (was %s)", got, newURL, oldURL)
		}
	})

	step("video details", func(t *testing.T) { checkVideoDetails(t, ctx, e, videos) })

	step("duplicates", func(t *testing.T) {
		waitAPI(t, e, "duplicate groups", func() bool {
			_, g := e.call(t, "GET", "/duplicates/groups", nil)
			return len(g["items"].([]any)) == len(wantGroups) && g["status"].(map[string]any)["complete"] == true
		})
		run(t, ctx, "open", page("duplicates"),
			waitJS(fmt.Sprintf(`document.querySelectorAll('#dup-groups .dup-group').length === %d`, len(wantGroups))),
			waitJS(`document.getElementById('dup-search').dataset.complete === 'true' &&
				document.getElementById('dup-search').textContent.startsWith('complete')`),
			waitJS(`[...document.querySelectorAll('#dup-groups .card')].every((c) => c.querySelector('img') && c.querySelector('img').naturalWidth > 0)`),
			e.shot("23-duplicates"))
		got := eval[[][]string](t, ctx, `[...document.querySelectorAll('#dup-groups .dup-group')].map((g) =>
			[...g.querySelectorAll('.card .meta.mono')].map((m) => m.textContent).sort())`)
		sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
		sort.Slice(wantGroups, func(i, j int) bool { return wantGroups[i][0] < wantGroups[j][0] })
		if fmt.Sprint(got) != fmt.Sprint(wantGroups) {
			t.Errorf("duplicate groups shown %v, want %v", got, wantGroups)
		}
	})

	step("resolve duplicates", func(t *testing.T) {
		confirm := chromedp.Click(chromedp.CSS(`dialog.confirm button[value=yes]`))
		run(t, ctx, "plan", chromedp.Click(chromedp.CSS("#resolve-plan-btn")),
			waitJS(`document.getElementById('resolve-summary')`),
			e.shot("24-resolve-plan"))
		keepers := eval[int](t, ctx, `document.querySelectorAll('#resolve-groups li.keep').length`)
		removes := eval[int](t, ctx, `document.querySelectorAll('#resolve-groups li.remove').length`)
		if keepers != len(wantGroups) || removes == 0 {
			t.Fatalf("plan shows %d keepers and %d copies for %d groups", keepers, removes, len(wantGroups))
		}
		run(t, ctx, "refused", chromedp.Click(chromedp.CSS("#resolve-execute")), confirm,
			waitJS(`(document.querySelector('#resolve-status .error') || {}).textContent?.includes('does not allow deletion')`))
		if code, _ := e.call(t, "PATCH", "/libraries/1", map[string]any{"allow_delete": true}); code != 200 {
			t.Fatalf("allow delete: %d", code)
		}
		run(t, ctx, "execute", chromedp.Click(chromedp.CSS("#resolve-execute")), confirm,
			waitJS(`document.getElementById('resolve-status').dataset.status === 'completed'`),
			waitJS(`document.getElementById('resolve-restore')`),
			e.shot("25-resolve-done"))
		if got := eval[[]string](t, ctx, `[...document.querySelectorAll('#resolve-groups li.remove .badge')].map((b) => b.textContent)`); len(got) != removes ||
			strings.Count(strings.Join(got, " "), "trashed") != removes {
			t.Fatalf("outcomes shown %v", got)
		}
		run(t, ctx, "restore", chromedp.Click(chromedp.CSS("#resolve-restore")),
			waitJS(`document.getElementById('resolve-status').textContent.includes('restored')`))
		run(t, ctx, "trash list", clickText(".resolve summary", "Trash"),
			waitJS(`document.querySelectorAll('#trash-list li[data-job-id]').length === 1`),
			chromedp.Click(chromedp.CSS("#trash-list li[data-job-id] details summary")),
			waitJS(`document.querySelectorAll('#trash-list .trash-files li[data-file-id]').length === `+fmt.Sprint(removes)),
			waitJS(`[...document.querySelectorAll('#trash-list .trash-files .badge')].every((b) => b.textContent === 'restored')`),
			e.shot("26-trash"))
	})

	step("comics only", func(t *testing.T) { checkComicsOnly(t, ctx, e, videos) })

	step("every request is a documented API route", func(t *testing.T) {
		reqs, _ := net.snapshot()
		checkRequests(t, reqs, 8)
	})
}

// waitAPI polls the API (another client's view) until cond holds.
func waitAPI(t *testing.T, e *env, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var state []string
			for _, p := range []string{"/jobs", "/thumbnails/metrics", "/libraries/1", "/files?limit=3"} {
				_, body := e.call(t, "GET", p, nil)
				state = append(state, fmt.Sprintf("%s: %v", p, body))
			}
			t.Fatalf("%s: not reached within 60s; the API says:\n%s", what, strings.Join(state, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
