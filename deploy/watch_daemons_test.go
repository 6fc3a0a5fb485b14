package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWatcherThroughDaemons runs controld and workerd on a watched library
// (issue 39): cbz files written slowly in chunks are listed with a ready
// cover soon after their last byte and never as corrupt in between; a mv
// inside the library keeps the file's id; an rm marks it missing; a storm
// of files in 100 folders costs at most one scan per folder per settle
// window. The figures are logged.
func TestWatcherThroughDaemons(t *testing.T) {
	bin := binDir(t)
	root := t.TempDir()
	state, library := filepath.Join(root, "state"), filepath.Join(root, "library")
	dir := filepath.Join(library, "comics")
	for _, d := range []string{state, dir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	env := append(cleanEnv(), "PATH="+bin+":"+os.Getenv("PATH"), "BINDERY_STATE_DIR="+state,
		"BINDERY_LIBRARY_ROOT="+library, "BINDERY_LISTEN="+addr, "BINDERY_DB="+filepath.Join(state, "bindery.db"))
	ctl := startProcess(t, env, filepath.Join(bin, "controld"), "serve")
	waitHealthy(t, ctl, env, "controld")
	wrk := startProcess(t, env, filepath.Join(bin, "workerd"), "run")
	waitHealthy(t, wrk, env, "workerd")
	token, err := os.ReadFile(filepath.Join(state, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	c := apiClient{base: "http://" + addr, token: strings.TrimSpace(string(token))}
	var lib struct{ ID int64 }
	if code := c.do(t, "POST", "/libraries", fmt.Sprintf(`{"name":"comics","path":%q}`, dir), &lib); code != 201 {
		t.Fatalf("create library: %d", code)
	}
	w := &watchedLibrary{t: t, c: c, id: lib.ID, dir: dir}
	waitFor(t, "watcher on inotify", 30*time.Second, func() bool {
		var l struct{ Watcher *struct{ Active string } }
		c.do(t, "GET", fmt.Sprintf("/libraries/%d", lib.ID), "", &l)
		return l.Watcher != nil && l.Watcher.Active == "inotify"
	})
	stop := corruptionSentinel(w)
	lat := slowCopies(t, w, 5, 20<<20)
	t.Logf("slow copies (20 MiB in 1 MiB chunks, 100 ms apart): last byte → listed with a ready cover: p50 %v, p95 %v, max %v (%v)",
		percentile(lat, 0.5), percentile(lat, 0.95), percentile(lat, 1), lat)
	// The goal is 5 s (issue 39); measured 4.4–4.8 s p95 on the 2-core
	// shared test machine, so the test allows 1 s of scheduling slack.
	if p95 := percentile(lat, 0.95); p95 > 6*time.Second {
		t.Errorf("p95 latency %v > 6 s", p95)
	}
	moveKeepsID(t, w, "Slow/book 00.cbz", "Moved/book 00.cbz")
	rmMarksMissing(t, w, "Slow/book 01.cbz")
	if bad := stop(); len(bad) > 0 {
		t.Errorf("files listed with an analysis error while being written: %v", bad)
	}
	storm(t, w, 100, 20)
	pollMode(t, w)
	t.Logf("RSS: controld %s, workerd %s", rssKB(ctl.cmd.Process.Pid), rssKB(wrk.cmd.Process.Pid))
	wrk.stop(t, 30*time.Second)
	ctl.stop(t, 30*time.Second)
}

func slowCopies(t *testing.T, w *watchedLibrary, tries, size int) []time.Duration {
	var lat []time.Duration
	for i := range tries {
		rel := fmt.Sprintf("Slow/book %02d.cbz", i)
		last := writeSlowly(t, filepath.Join(w.dir, filepath.FromSlash(rel)), book(t, i, size), 1<<20, 100*time.Millisecond)
		waitFor(t, rel+" listed with a ready cover", 60*time.Second, func() bool {
			f, ok := w.file(rel)
			return ok && f.Cover.Status == "ready"
		})
		lat = append(lat, time.Since(last))
	}
	return lat
}

func moveKeepsID(t *testing.T, w *watchedLibrary, from, to string) {
	var before watchedFile
	waitFor(t, from+" hashed", 60*time.Second, func() bool {
		f, ok := w.file(from)
		before = f
		return ok && f.ContentHash != nil
	})
	if err := os.MkdirAll(filepath.Join(w.dir, filepath.Dir(to)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(w.dir, from), filepath.Join(w.dir, to)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The scan lists the new path as a new row first (discovery), then
	// hashes it and, matching the missing row, moves that row there
	// (phase 2): the listing settles when the old path is gone. A move
	// not followed leaves the old path listed as missing, and this waits
	// in vain.
	var after watchedFile
	waitFor(t, to+" listed and "+from+" gone", 30*time.Second, func() bool {
		f, ok := w.file(to)
		after = f
		_, old := w.file(from)
		return ok && !f.IsMissing && !old
	})
	if after.ID != before.ID {
		t.Fatalf("mv %s → %s: id %d became %d", from, to, before.ID, after.ID)
	}
	if _, ok := w.file(from); ok {
		t.Fatalf("%s still listed after the move", from)
	}
	t.Logf("mv inside the library: same id %d, listed at the new path %v after the rename", after.ID, time.Since(start).Round(time.Millisecond))
}

func rmMarksMissing(t *testing.T, w *watchedLibrary, rel string) {
	if err := os.Remove(filepath.Join(w.dir, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, rel+" missing", 30*time.Second, func() bool {
		f, ok := w.file(rel)
		return ok && f.IsMissing
	})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("rm marked missing after %v > 5 s", d)
	} else {
		t.Logf("rm → missing in %v", d.Round(time.Millisecond))
	}
}

// storm copies folders×per small cbz at once and counts the scan jobs that
// named each folder.
func storm(t *testing.T, w *watchedLibrary, folders, per int) {
	before := scanJobIDs(t, w)
	data := book(t, 999, 1)
	start := time.Now()
	for f := range folders {
		for i := range per {
			p := filepath.Join(w.dir, "Storm", fmt.Sprintf("F%03d", f), fmt.Sprintf("book %03d.cbz", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	copied := time.Now()
	want := folders * per
	waitFor(t, "storm listed", 120*time.Second, func() bool {
		files, err := w.files()
		n := 0
		for _, f := range files {
			if strings.HasPrefix(f.RelativePath, "Storm/") && !f.IsMissing {
				n++
			}
		}
		return err == nil && n == want
	})
	listed := time.Since(copied)
	perFolder, jobs := map[string]int{}, 0
	for id, paths := range scanJobIDs(t, w) {
		if _, old := before[id]; old {
			continue
		}
		jobs++
		if paths == nil {
			t.Errorf("scan job %d during the storm was library-wide", id)
		}
		for _, p := range paths {
			perFolder[p]++
		}
	}
	windows := int(copied.Sub(start)/(2*time.Second)) + 1
	for f, n := range perFolder {
		if n > windows {
			t.Errorf("%s scanned %d times in %d settle windows", f, n, windows)
		}
	}
	t.Logf("storm: %d cbz in %d folders copied in %v; %d scan jobs (%d folder scopes); all listed %v after the last copy",
		want, folders, copied.Sub(start).Round(time.Millisecond), jobs, len(perFolder), listed.Round(time.Millisecond))
	if listed > 30*time.Second {
		t.Errorf("storm listed %v after the last copy > 30 s", listed)
	}
}

// scanJobIDs maps every scan job of the library to the folders its payload
// names (nil: the whole library).
func scanJobIDs(t *testing.T, w *watchedLibrary) map[int64][]string {
	out := map[int64][]string{}
	for cursor := ""; ; {
		var page struct {
			Items []struct {
				ID      int64           `json:"id"`
				Payload json.RawMessage `json:"payload"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		q := fmt.Sprintf("/jobs?kind=scan&library_id=%d&limit=200", w.id)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		w.c.do(t, "GET", q, "", &page)
		for _, j := range page.Items {
			var p struct{ Paths []string }
			_ = json.Unmarshal(j.Payload, &p)
			out[j.ID] = p.Paths
		}
		if page.NextCursor == nil {
			return out
		}
		cursor = *page.NextCursor
	}
}

// pollMode switches the library to polling (inotify off by setting) at a
// 2 s interval: a new book is listed within the interval plus the settle
// time plus a scan.
func pollMode(t *testing.T, w *watchedLibrary) {
	if code := w.c.do(t, "PATCH", "/settings", `{"watch.poll_interval_seconds":2}`, nil); code != 200 {
		t.Fatalf("set the poll interval: %d", code)
	}
	if code := w.c.do(t, "PATCH", fmt.Sprintf("/libraries/%d", w.id), `{"watch":"poll"}`, nil); code != 200 {
		t.Fatalf("set watch=poll: %d", code)
	}
	waitFor(t, "watcher polling", 30*time.Second, func() bool {
		var l struct{ Watcher *struct{ Active string } }
		w.c.do(t, "GET", fmt.Sprintf("/libraries/%d", w.id), "", &l)
		return l.Watcher != nil && l.Watcher.Active == "poll"
	})
	time.Sleep(500 * time.Millisecond) // the poller's first pass records the tree
	rel := "Polled/book.cbz"
	last := writeSlowly(t, filepath.Join(w.dir, filepath.FromSlash(rel)), book(t, 77, 1<<20), 256<<10, 100*time.Millisecond)
	waitFor(t, rel+" listed by polling", 30*time.Second, func() bool {
		f, ok := w.file(rel)
		return ok && !f.IsMissing
	})
	d := time.Since(last)
	t.Logf("poll mode (interval 2 s, settle 2 s): last byte → listed %v", d.Round(time.Millisecond))
	if d > 2*time.Second+2*time.Second+5*time.Second {
		t.Errorf("poll mode listed after %v > interval + settle + 5 s", d)
	}
}
