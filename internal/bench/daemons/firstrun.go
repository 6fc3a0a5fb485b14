package daemons

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
	"github.com/bindery-nas/bindery/internal/fixtures"
)

// FirstRunRows: what a new user feels first. A never-scanned tree of
// books (every tenth copied once), its page cache dropped; both daemons
// start on a fresh database, the library is added and one scan requested,
// and the time is taken until GET /duplicates/groups lists every group,
// the definition. Beside it, `jdupes -r` on the same tree, cold
// too. The note gives when every job was done as well (the hash job goes
// on past the groups: the backfill, then the same-book page digests), and
// where the time went, from the jobs' own times.
func FirstRunRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "first run end to end: scan request on a cold, never-scanned tree → complete duplicate groups", "≤ 1.0× jdupes -r"
	books := r.Pick([]int{300}, []int{5000})[0]
	size := fmt.Sprintf("%s files (cbz, cbr, cb7 books and images) + %s copies", benchx.Count(books), benchx.Count(books/10))
	dir := filepath.Join(r.Data, "firstrun")
	lib := filepath.Join(dir, "libraries", "books")
	r.Logf("first-run: generating %d books", books)
	want, files, err := firstRunTree(lib, books)
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	ours, phases, err := firstRunBindery(ctx, r, dir, lib, want, files)
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	jd, err := firstRunJdupes(ctx, lib, files)
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	return []benchx.Row{{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("%s to %d groups (both daemons, SQLite)", secsD(ours), want),
		Baseline: "jdupes -r: " + secsD(jd),
		Ratio:    benchx.Ratio(float64(ours), float64(jd)) + " jdupes's time", Target: target,
		Status: benchx.Verdict(jd > 0 && ours <= jd), Note: phases}}
}

// firstRunTree generates books with real pages (fixtures.Library: cbz,
// cbr, cb7 and images in turn, with 8 page sets among them, so that most
// books have a same-book twin to digest) and a copy of every tenth, and returns how many duplicate groups the tree
// holds (counted from its bytes) and every file's path.
func firstRunTree(lib string, books int) (groups int, files []string, err error) {
	if _, err := os.Stat(filepath.Join(lib, ".complete")); err != nil {
		if err := os.RemoveAll(lib); err != nil {
			return 0, nil, err
		}
		m, err := fixtures.Library(lib, fixtures.LibrarySpec{Files: books, Page: fixtures.PageOptions{W: 800, H: 1200}})
		if err != nil {
			return 0, nil, err
		}
		for i := 0; i < len(m.Files); i += 10 {
			src := filepath.Join(lib, filepath.FromSlash(m.Files[i].Path))
			if err := fixtures.CopyFile(src, filepath.Join(filepath.Dir(src), "copy of "+filepath.Base(src))); err != nil {
				return 0, nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(lib, ".complete"), nil, 0o644); err != nil {
			return 0, nil, err
		}
	}
	seen := map[[32]byte]int{}
	err = filepath.WalkDir(lib, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || d.Name() == ".complete" {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		seen[[32]byte(h.Sum(nil))]++
		files = append(files, p)
		return nil
	})
	for _, n := range seen {
		if n > 1 {
			groups++
		}
	}
	return groups, files, err
}

// evict drops the files from the page cache (posix_fadvise after a sync):
// the next reader meets the disk, as on a NAS whose library is not cached.
func evict(files []string) error {
	unix.Sync()
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func firstRunJdupes(ctx context.Context, lib string, files []string) (time.Duration, error) {
	bin, err := exec.LookPath("jdupes")
	if err != nil {
		return 0, err
	}
	if err := evict(files); err != nil {
		return 0, err
	}
	start := time.Now()
	if out, err := exec.CommandContext(ctx, bin, "-q", "-r", lib).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("jdupes: %v: %s", err, out)
	}
	return time.Since(start), nil
}

// firstRunBindery times the first run through both daemons on a fresh
// state folder, and describes its phases.
func firstRunBindery(ctx context.Context, r *benchx.Runner, dir, lib string, want int, files []string) (time.Duration, string, error) {
	ctlBin, err := r.Bins.Build(ctx, "./cmd/controld")
	if err != nil {
		return 0, "", err
	}
	wrkBin, err := r.Bins.Build(ctx, "./cmd/workerd")
	if err != nil {
		return 0, "", err
	}
	if err := os.RemoveAll(filepath.Join(dir, "state")); err != nil {
		return 0, "", err
	}
	v := &visible{lib: lib}
	if err := v.start(ctx, ctlBin, wrkBin, dir, "bench-firstrun"); err != nil {
		return 0, "", err
	}
	defer v.stop()
	var l struct{ ID int64 }
	if err := v.call(ctx, "POST", "/libraries", map[string]any{"name": "books", "path": lib}, &l); err != nil {
		return 0, "", err
	}
	if err := evict(files); err != nil {
		return 0, "", err
	}
	start := time.Now()
	if err := v.call(ctx, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": l.ID}, nil); err != nil {
		return 0, "", err
	}
	var complete time.Duration // when the last group appeared
	for {
		n, err := v.groups(ctx)
		if err != nil {
			return 0, "", err
		}
		if n >= want {
			if complete == 0 {
				complete = time.Since(start)
			}
			idle, err := v.idle(ctx)
			if err != nil {
				return 0, "", err
			}
			if idle {
				break
			}
		}
		if time.Since(start) > 30*time.Minute {
			return 0, "", fmt.Errorf("first run: %d of %d groups after 30 minutes: %s", n, want, tail(v.c.log))
		}
		time.Sleep(20 * time.Millisecond)
	}
	idle := time.Since(start)
	phases, err := v.phases(ctx, start)
	return complete, fmt.Sprintf("groups complete %s, every job done %s (the backfill, same-book page digests); %s", secsD(complete), secsD(idle), phases), err
}

// groups counts the duplicate groups GET /duplicates/groups lists.
func (v *visible) groups(ctx context.Context) (int, error) {
	n, cursor := 0, ""
	for {
		var page struct {
			Items      []struct{} `json:"items"`
			NextCursor *string    `json:"next_cursor"`
		}
		if err := v.call(ctx, "GET", "/duplicates/groups?limit=200&cursor="+cursor, nil, &page); err != nil {
			return 0, err
		}
		n += len(page.Items)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return n, nil
		}
		cursor = *page.NextCursor
	}
}

// idle: no job pending, running or retryable, and no scan request queued.
func (v *visible) idle(ctx context.Context) (bool, error) {
	for _, st := range []string{"pending", "running", "retryable"} {
		var page struct{ Items []struct{} }
		if err := v.call(ctx, "GET", "/jobs?limit=1&status="+st, nil, &page); err != nil {
			return false, err
		}
		if len(page.Items) > 0 {
			return false, nil
		}
	}
	var q struct{ Items []struct{} }
	err := v.call(ctx, "GET", "/queue?limit=1", nil, &q)
	return err == nil && len(q.Items) == 0, err
}

// phases lists the run's jobs in order with when each was created, began
// and ended, in seconds from start: the scan, the hash jobs, and the gaps
// between (admission, the follow-up tick).
func (v *visible) phases(ctx context.Context, start time.Time) (string, error) {
	var page struct {
		Items []struct {
			ID         int64      `json:"id"`
			Kind       string     `json:"kind"`
			CreatedAt  time.Time  `json:"created_at"`
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
		} `json:"items"`
	}
	if err := v.call(ctx, "GET", "/jobs?limit=50", nil, &page); err != nil {
		return "", err
	}
	sort.Slice(page.Items, func(i, j int) bool { return page.Items[i].ID < page.Items[j].ID })
	at := func(t time.Time) string { return fmt.Sprintf("%.2f", t.Sub(start).Seconds()) }
	var parts []string
	for _, j := range page.Items {
		s := fmt.Sprintf("%s #%d created %s", j.Kind, j.ID, at(j.CreatedAt))
		if j.StartedAt != nil && j.FinishedAt != nil {
			s += fmt.Sprintf(", ran %s–%s", at(*j.StartedAt), at(*j.FinishedAt))
		}
		parts = append(parts, s)
	}
	return "jobs (s from the request): " + strings.Join(parts, "; "), nil
}
