package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bindery-nas/bindery/internal/api"
	"github.com/bindery-nas/bindery/internal/events"
	"github.com/bindery-nas/bindery/internal/scheduler"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/internal/watch"
	"github.com/bindery-nas/bindery/internal/web"
)

const testToken = "web-test-token-0123456789abcdef"

// env is controld assembled in process the way `controld serve` does it:
// a real database file, the event feed, the scheduler and the admin API,
// with the dashboard mounted at "/" next to /api/v1.
type env struct {
	URL      string
	DB       string
	State    string
	Root     string // the library root
	Store    *store.Store
	Handler  http.Handler
	Shots    string // screenshot folder
	stopFeed context.CancelFunc
}

func setup(t *testing.T) *env {
	t.Helper()
	path := storetest.MustMigrate(t)
	st := storetest.MustOpen(t, path, store.RoleControl, nil)
	e := &env{DB: path, State: t.TempDir(), Root: t.TempDir(), Store: st, Shots: screenshotDir(t)}
	ctx, cancel := context.WithCancel(context.Background())
	e.stopFeed = cancel
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	feed := events.New(events.Config{Store: st, Interval: 50 * time.Millisecond, Logger: quiet})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = feed.Run(ctx) }()
	sched := scheduler.New(st, scheduler.Config{Logger: quiet})
	if err := sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	watcher := watch.New(watch.Config{Store: st, Logger: quiet, Kick: sched.Kick, Reconcile: 200 * time.Millisecond})
	wg.Add(1)
	go func() { defer wg.Done(); _ = watcher.Run(ctx) }()
	srv, err := api.New(api.Config{Store: st, Token: testToken, LibraryRoots: []string{e.Root},
		StateDir: e.State, Events: feed, Logger: quiet, Kick: sched.Kick, WatchStatus: watcher.Status})
	if err != nil {
		t.Fatal(err)
	}
	e.Handler = mount(srv.Handler(), web.Handler())
	hs := httptest.NewServer(e.Handler)
	e.URL = hs.URL
	t.Cleanup(func() {
		cancel() // ends the event streams, so Close need not wait for them
		sched.Stop()
		wg.Wait()
		hs.CloseClientConnections()
		hs.Close()
	})
	return e
}

// mount is what controld needs: the API's own paths go to the API, every
// other path to the dashboard.
func mount(apiH, webH http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == api.Base || strings.HasPrefix(p, api.Base+"/") || p == "/healthz" || p == "/readyz" || p == "/metrics" {
			apiH.ServeHTTP(w, r)
			return
		}
		webH.ServeHTTP(w, r)
	})
}

// screenshotDir is <repo>/artifacts/screenshots (gitignored), created.
func screenshotDir(t *testing.T) string {
	t.Helper()
	out := filepath.Join(testutil.RepoRoot(t), "artifacts", "screenshots")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// chromiumPath finds the browser or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install -y chromium, or scripts/deps.sh chromium): skipping the browser tests")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a
// context for chromedp actions; everything ends with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	var logs bytes.Buffer
	var mu sync.Mutex
	ctx, cancelB := chromedp.NewContext(actx, chromedp.WithErrorf(func(f string, a ...any) {
		mu.Lock()
		fmt.Fprintf(&logs, f+"\n", a...)
		mu.Unlock()
	}))
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	if err := chromedp.Do(ctx); err != nil {
		cancelT()
		cancelB()
		cancelA()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelT()
		cancelB()
		cancelA()
		mu.Lock()
		defer mu.Unlock()
		if t.Failed() && logs.Len() > 0 {
			t.Logf("chromedp errors:\n%s", logs.String())
		}
	})
	return ctx
}

// shot saves a full-page PNG of the current page as <name>.png.
func (e *env) shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(e.Shots, name+".png"), buf, 0o644)
	})
}

// waitJS polls a JavaScript condition in the page until it is true (the
// UI updates asynchronously; this waits on the DOM state, not on time).
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for {
			ok, err := chromedp.Evaluate[bool]("!!("+expr+")")(ctx, tg)
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s: %w", expr, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// run runs actions with a per-step deadline so a stuck step names itself.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('main').innerText`))
		if buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			_ = os.WriteFile(filepath.Join(screenshotDir(t), "FAILED-"+strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".png"), buf, 0o644)
		}
		t.Fatalf("%s: %v (at %s)\npage text:\n%s", step, err, loc, text)
	}
}

// eval evaluates a JavaScript expression and returns its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}
