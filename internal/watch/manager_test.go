package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// watchEnv is a real database, one library folder and a running Manager
// whose requests are recorded.
type watchEnv struct {
	t    *testing.T
	st   *store.Store
	root string
	lib  int64
	m    *Manager
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	paths  []string
	reason string
	at     time.Time
}

// startWatch starts the manager once the files pre are in place.
func startWatch(t *testing.T, mode protocol.WatchMode, settle time.Duration, cfg Config, pre ...string) *watchEnv {
	t.Helper()
	st, _, _ := storetest.MustOpenDB(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.PutSettings(ctx, map[string]string{"watch.settle_ms": fmt.Sprint(settle.Milliseconds()),
		"watch.poll_interval_seconds": "1"}); err != nil {
		t.Fatal(err)
	}
	lib, err := st.CreateLibrary(ctx, store.NewLibrary{Name: "comics", Path: root, Watch: mode})
	if err != nil {
		t.Fatal(err)
	}
	e := &watchEnv{t: t, st: st, root: root, lib: lib.ID}
	for _, rel := range pre {
		e.write(rel, 10)
	}
	cfg.Store, cfg.Backoff = st, 100*time.Millisecond
	if cfg.Reconcile == 0 {
		cfg.Reconcile = 50 * time.Millisecond
	}
	e.m = New(cfg)
	e.m.onRequest = func(_ int64, paths []string, reason string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.reqs = append(e.reqs, recorded{paths: paths, reason: reason, at: time.Now()})
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { e.m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

func (e *watchEnv) waitActive(want string) Status {
	e.t.Helper()
	var s Status
	testutil.WaitFor(e.t, "watcher "+want, 20*time.Second, func() bool {
		s, _ = e.m.Status(e.lib)
		return s.Active == want
	})
	return s
}

func (e *watchEnv) requests() []recorded {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]recorded(nil), e.reqs...)
}

// waitFolder waits for a request naming folder (or the whole library).
func (e *watchEnv) waitFolder(folder string, limit time.Duration) recorded {
	e.t.Helper()
	var hit recorded
	testutil.WaitFor(e.t, "a request for "+folder, limit, func() bool {
		for _, r := range e.requests() {
			if r.paths == nil || protocol.ScanPathsCover(r.paths, []string{folder}) {
				hit = r
				return true
			}
		}
		return false
	})
	return hit
}

func (e *watchEnv) write(rel string, size int) {
	e.t.Helper()
	p := filepath.Join(e.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// 10,000 files created at once in 100 folders: every folder requested,
// two requests for one folder at least a settle time apart, and nothing
// for the trash or excluded folders. (How many settle windows the storm
// spans is the loop's to tell, not the copy's: on a loaded machine the
// events reach it well after the copy ended.)
func TestInotifyCoalescesAStorm(t *testing.T) {
	const settle = 500 * time.Millisecond
	e := startWatch(t, protocol.WatchAuto, settle, Config{}, "Old/book.cbz")
	s := e.waitActive("inotify")
	if s.Folders != 2 || s.MaxUserWatches <= 0 || s.FSType == "" {
		t.Fatalf("status %+v", s)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for f := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				e.write(fmt.Sprintf("Storm/F%03d/book %03d.cbz", f, i), 64)
			}
		}()
	}
	wg.Wait()
	copied := time.Since(start)
	e.write(".bindery-trash/x/book.cbz", 10)
	e.write("Old/@eaDir/thumb.jpg", 10)
	e.write("Old/.hidden.cbz", 10)
	for f := range 100 {
		e.waitFolder(fmt.Sprintf("Storm/F%03d/", f), 20*time.Second)
	}
	time.Sleep(3 * settle) // anything still to come
	last := map[string]time.Time{}
	perFolder := map[string]int{}
	reqs := e.requests()
	for _, r := range reqs {
		if r.paths == nil {
			t.Fatalf("a library-wide request during a storm: %+v", r)
		}
		for _, p := range r.paths {
			if strings.Contains(p, "bindery-trash") || strings.Contains(p, "@eaDir") || p == "Old/" {
				t.Errorf("request for an ignored change: %q", p)
			}
			if prev, ok := last[p]; ok && r.at.Sub(prev) < settle {
				t.Errorf("%s requested twice %v apart, within one settle time", p, r.at.Sub(prev))
			}
			last[p] = r.at
			perFolder[p]++
		}
	}
	again := 0
	for _, n := range perFolder {
		if n > 1 {
			again++
		}
	}
	jobs, err := storetest.QueryInt(context.Background(), e.st, `SELECT count(*) FROM jobs WHERE kind = 'scan'`)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("10,000 files in 100 folders copied in %v: %d requests, %d scan jobs, %d folders requested (%d more than once), settle %v",
		copied.Round(time.Millisecond), len(reqs), jobs, len(perFolder), again, settle)
}

// Poll mode (set on the library): a new folder and a new file in an old
// folder are requested within the poll interval plus the settle time;
// folder removal too; the trash never.
func TestPollMode(t *testing.T) {
	t.Parallel()
	e := startWatch(t, protocol.WatchPoll, 300*time.Millisecond, Config{}, "A/one.cbz", "B/two.cbz")
	if s := e.waitActive("poll"); !strings.Contains(s.Reason, "set to poll") {
		t.Fatalf("status %+v", s)
	}
	e.write(".bindery-trash/A/one.cbz", 10)
	start := time.Now()
	e.write("A/new.cbz", 10)
	e.write("C/deep/x.cbz", 10)
	for _, f := range []string{"A/", "C/deep/"} {
		r := e.waitFolder(f, 10*time.Second)
		if lag := r.at.Sub(start); lag > 1300*time.Millisecond+300*time.Millisecond+time.Second {
			t.Errorf("%s requested %v after the change; want ≤ interval + settle (+1 s of slack)", f, lag)
		}
	}
	if err := os.RemoveAll(filepath.Join(e.root, "B")); err != nil {
		t.Fatal(err)
	}
	e.waitFolder("B/", 10*time.Second)
	for _, r := range e.requests() {
		for _, p := range r.paths {
			if strings.Contains(p, "bindery-trash") {
				t.Errorf("the trash triggered %q", p)
			}
		}
	}
}

// A library with more folders than max_user_watches allows says so and is
// polled; its changes are still requested.
func TestWatchLimitFallsBackToPoll(t *testing.T) {
	t.Parallel()
	limit := filepath.Join(t.TempDir(), "max_user_watches")
	if err := os.WriteFile(limit, []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startWatch(t, protocol.WatchAuto, 200*time.Millisecond, Config{MaxWatchesFile: limit},
		"A/a.cbz", "B/b.cbz", "C/c.cbz", "D/d.cbz")
	s := e.waitActive("poll")
	if !s.WatchLimitShort || s.Folders != 5 || s.MaxUserWatches != 3 || !strings.Contains(s.Reason, "max_user_watches is 3") {
		t.Fatalf("status %+v", s)
	}
	e.write("C/new.cbz", 10)
	e.waitFolder("C/", 10*time.Second)
}

// A watcher whose root vanishes (unmounted) goes down, comes back with the
// root and requests exactly one library-wide catch-up scan; nothing is
// requested for the folders that disappeared with the root.
func TestWatcherRestartsWithCatchUp(t *testing.T) {
	t.Parallel()
	e := startWatch(t, protocol.WatchInotify, 200*time.Millisecond, Config{}, "A/a.cbz")
	e.waitActive("inotify")
	away := e.root + ".away"
	if err := os.Rename(e.root, away); err != nil {
		t.Fatal(err)
	}
	e.waitActive("down")
	time.Sleep(300 * time.Millisecond)
	if err := os.Rename(away, e.root); err != nil {
		t.Fatal(err)
	}
	s := e.waitActive("inotify")
	if s.Restarts < 1 || !strings.Contains(s.LastError, "gone") {
		t.Fatalf("status %+v", s)
	}
	r := e.waitFolder("A/", 10*time.Second)
	if r.paths != nil || r.reason != "watch catch-up" {
		t.Fatalf("first request after the restart: %+v", r)
	}
	time.Sleep(500 * time.Millisecond)
	catchUps := 0
	for _, r := range e.requests() {
		if r.reason == "watch catch-up" {
			catchUps++
		}
	}
	if catchUps != 1 {
		t.Fatalf("%d catch-up scans, want 1: %+v", catchUps, e.requests())
	}
	e.write("A/after.cbz", 10) // the new watch works
	testutil.WaitFor(t, "a request after the restart", 10*time.Second, func() bool {
		rs := e.requests()
		return len(rs) >= 2 && rs[len(rs)-1].reason == "watch"
	})
}
