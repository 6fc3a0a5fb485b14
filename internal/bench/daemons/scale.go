package daemons

import (
	"archive/zip"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
	"github.com/bindery-nas/bindery/internal/fixtures"
)

// ScaleRows: whether the per-file cost stays flat as a library grows
// (issue 40). Small stored cbz books (one tiny page and a ComicInfo.xml,
// 100 per folder) go through both daemons on SQLite, covers off (their
// cost has rows of its own): the first scan, the hash job that follows
// it, and a rescan of the unchanged tree beside `find -printf` on the
// same tree; then each daemon's peak RSS and the database's size per
// file. workerd's peak is taken per phase (first scan, hash job, rescan)
// from the kernel's own high-water mark, reset between phases, so a spike
// between two samples cannot be missed. BENCH_WORKERD_ENV (see
// visible.start) sets workerd's environment alone. Sizes run in one process tree each, smallest first, so the rate
// at the largest size is set beside the rate at the smallest of the same
// run.
func ScaleRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	sizes := r.Pick([]int{2000, 10_000}, []int{10_000, 1_000_000})
	if v := os.Getenv("BENCH_SCALE_SIZES"); v != "" { // e.g. 100000,300000: sizes of one's own
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return []benchx.Row{benchx.NotRunRow("scale: first scan through both daemons", v, "BENCH_SCALE_SIZES", fmt.Errorf("BENCH_SCALE_SIZES=%q: not a list of sizes", v))}
			}
			sizes = append(sizes, n)
		}
	}
	var rows []benchx.Row
	var base float64 // first-scan files/s at the smallest size
	for i, n := range sizes {
		res, err := scaleRun(ctx, r, n)
		if err != nil {
			rows = append(rows, benchx.NotRunRow("scale: first scan through both daemons", benchx.Count(n)+" files", "files/s at 1M ≥ 0.8× files/s at 10k", err))
			continue
		}
		if i == 0 {
			base = res.scanRate()
		}
		rows = append(rows, res.rows(base, n == sizes[len(sizes)-1] && len(sizes) > 1)...)
	}
	return rows
}

// scaleResult is one size's measurements.
type scaleResult struct {
	files                int
	scan, hash, rescan   time.Duration
	find                 time.Duration
	ctlRSS, wrkRSS, dbMB float64
	// wrkPhases is workerd's peak RSS in MB in each phase: first scan,
	// hash job, rescan; exact (false: clear_refs refused, each figure is
	// the peak since workerd started).
	wrkPhases          [3]float64
	exact              bool
	scanJobs, hashJobs int
}

func (s scaleResult) scanRate() float64 { return float64(s.files) / s.scan.Seconds() }

func (s scaleResult) rows(base float64, last bool) []benchx.Row {
	size := benchx.Count(s.files) + " files"
	first := benchx.Row{Workload: "scale: first scan through both daemons (covers off)", Size: size,
		Bindery:  fmt.Sprintf("%s (%s files/s; scan jobs: %d)", secsD(s.scan), benchx.Num(s.scanRate()), s.scanJobs),
		Baseline: fmt.Sprintf("the smallest size of this run: %s files/s", benchx.Num(base)),
		Ratio:    benchx.Ratio(s.scanRate(), base) + " the smallest size's rate", Target: "files/s at the largest size ≥ 0.8× the smallest's", Status: benchx.Info}
	if last {
		first.Status = benchx.Verdict(s.scanRate() >= 0.8*base)
	}
	rescan := benchx.Row{Workload: "scale: rescan of the unchanged tree through both daemons", Size: size,
		Bindery: secsD(s.rescan), Baseline: "find -printf: " + secsD(s.find),
		Ratio: benchx.Ratio(float64(s.rescan), float64(s.find)) + " find's time", Target: "≤ 3× find -printf",
		Status: benchx.Verdict(s.find > 0 && s.rescan <= 3*s.find)}
	hash := benchx.Row{Workload: "scale: the hash job after the first scan", Size: size,
		Bindery:  fmt.Sprintf("%s (%s files/s; hash jobs: %d)", secsD(s.hash), benchx.Num(float64(s.files)/s.hash.Seconds()), s.hashJobs),
		Baseline: "—", Ratio: "—", Target: "measured", Status: benchx.Info}
	rss := benchx.Row{Workload: "scale: peak RSS of both daemons, and the database", Size: size,
		Bindery: fmt.Sprintf("workerd %s MB (%s: scan %s, hash job %s, rescan %s), controld %s MB; database and WAL %s bytes/file",
			benchx.Num(s.wrkRSS), map[bool]string{true: "each phase's own peak", false: "peak so far after"}[s.exact],
			benchx.Num(s.wrkPhases[0]), benchx.Num(s.wrkPhases[1]), benchx.Num(s.wrkPhases[2]), benchx.Num(s.ctlRSS), benchx.Num(s.dbMB*1e6/float64(s.files))),
		Baseline: "—", Ratio: "—", Target: "workerd ≤ 100 MB, flat", Status: benchx.Info}
	if s.files >= 100_000 {
		rss.Status = benchx.Verdict(s.wrkRSS <= 100)
	}
	return []benchx.Row{first, rescan, hash, rss}
}

// scaleRun measures one size on a fresh state folder.
func scaleRun(ctx context.Context, r *benchx.Runner, n int) (scaleResult, error) {
	res := scaleResult{files: n}
	dir := filepath.Join(r.Data, fmt.Sprintf("scale-%d", n))
	// The generated books are a corpus like the others: under r.Tmp, the
	// -cache folder when one is given, so a 1,000,000-book tree (2 minutes
	// to write) is written once. The scan only reads them.
	lib := filepath.Join(r.Tmp, fmt.Sprintf("scale-%d-books", n))
	r.Logf("scale: generating %d books", n)
	if err := scaleTree(lib, n); err != nil {
		return res, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	ctlBin, err := r.Bins.Build(ctx, "./cmd/controld")
	if err != nil {
		return res, err
	}
	wrkBin, err := r.Bins.Build(ctx, "./cmd/workerd")
	if err != nil {
		return res, err
	}
	if res.find, err = timeFind(ctx, lib); err != nil {
		return res, err
	}
	v := &visible{lib: lib}
	if err := v.start(ctx, ctlBin, wrkBin, dir, "bench-scale"); err != nil {
		return res, err
	}
	defer v.stop()
	var l struct{ ID int64 }
	if err := v.call(ctx, "PATCH", "/settings", map[string]any{"scan.cover.mode": "off"}, nil); err != nil {
		return res, err
	}
	if err := v.call(ctx, "POST", "/libraries", map[string]any{"name": "books", "path": lib}, &l); err != nil {
		return res, err
	}
	peak := peakRSS{pid: v.worker.Process.Pid}
	startMB := peak.next() // workerd's start, and the reset before the scan
	r.Logf("scale: first scan and hash of %d books", n)
	first, err := v.scanUntilIdle(ctx, l.ID, func(kind string) {
		if kind == "scan" { // the hash job starts a dispatcher tick later
			res.wrkPhases[0] = peak.next()
		}
	}, "scan", "hash")
	if err != nil {
		return res, err
	}
	res.wrkPhases[1] = peak.next()
	res.scan, res.scanJobs = first.ran("scan")
	res.hash, res.hashJobs = first.ran("hash")
	r.Logf("scale: rescan of %d books", n)
	again, err := v.scanUntilIdle(ctx, l.ID, nil, "scan")
	if err != nil {
		return res, err
	}
	res.wrkPhases[2] = peak.next()
	res.rescan, _ = again.ran("scan")
	res.exact = peak.exact
	res.wrkRSS = max(startMB, res.wrkPhases[0], res.wrkPhases[1], res.wrkPhases[2])
	res.ctlRSS = vmHWMMB(v.c.cmd.Process.Pid)
	r.Logf("scale: %d books: workerd peak RSS %.1f MB (start %.1f, scan %.1f, hash job %.1f, rescan %.1f; exact per phase: %v)",
		n, res.wrkRSS, startMB, res.wrkPhases[0], res.wrkPhases[1], res.wrkPhases[2], res.exact)
	res.dbMB = fileMB(filepath.Join(dir, "state", "bindery.db")) + fileMB(filepath.Join(dir, "state", "bindery.db-wal"))
	return res, nil
}

// scaleTree writes n small stored cbz books, 100 per folder, each with a
// page and a ComicInfo.xml of its own, unless they are there already.
func scaleTree(lib string, n int) error {
	done := filepath.Join(lib, ".complete")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	base, err := fixtures.Image(fixtures.JPEG, 4, 6, 1)
	if err != nil {
		return err
	}
	for i := range n {
		// A page of its own (a tiny picture draws the same at every seed,
		// so a comment names the book): books that share pages are
		// candidates for the same-book phase, which a real library's
		// books are not. Not a PNG text chunk: a chunk ends with its own
		// CRC-32, which cancels most of the text's effect on the zip
		// entry's CRC-32, so 100,000 such pages had 56,048 distinct
		// (size, CRC) pairs and 69 % of the books were candidates.
		page := jpegWithComment(base, fmt.Sprintf("book %d", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Join(lib, fmt.Sprintf("Series %05d", i/100)), 0o755); err != nil {
				return err
			}
		}
		info := fmt.Sprintf("<ComicInfo><Series>Series %05d</Series><Number>%d</Number></ComicInfo>", i/100, i%100+1)
		book, err := fixtures.Zip([]fixtures.File{{Name: "001.jpg", Data: page}, {Name: "ComicInfo.xml", Data: []byte(info)}}, zip.Store)
		if err != nil {
			return err
		}
		p := filepath.Join(lib, fmt.Sprintf("Series %05d", i/100), fmt.Sprintf("Book %03d.cbz", i%100+1))
		if err := os.WriteFile(p, book, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(done, nil, 0o644)
}

// jpegWithComment is the JPEG jpg with a COM segment holding text right
// after its SOI marker: the same picture, other bytes.
func jpegWithComment(jpg []byte, text string) []byte {
	out := append(slices.Clone(jpg[:2]), 0xff, 0xfe)
	out = binary.BigEndian.AppendUint16(out, uint16(2+len(text)))
	out = append(out, text...)
	return append(out, jpg[2:]...)
}

// timeFind times `find -printf` listing the tree with sizes and mtimes,
// what a rescan must learn; the second of two runs (the first warms the
// inode cache, as the scan's own first run has).
func timeFind(ctx context.Context, lib string) (time.Duration, error) {
	var took time.Duration
	for range 2 {
		start := time.Now()
		if out, err := exec.CommandContext(ctx, "find", lib, "-printf", "%p %s %T@\n").Output(); err != nil {
			return 0, fmt.Errorf("find: %v: %.200s", err, out)
		}
		took = time.Since(start)
	}
	return took, nil
}

// scanUntilIdle requests a scan of the library and waits until no job is
// left and a job of each of kinds has run since the request (the hash job
// follows a first scan a dispatcher tick after it ends), then lists the
// jobs that ran since the request. done, when not nil, is called once per
// kind as soon as a job of that kind has finished (checked every 250 ms).
func (v *visible) scanUntilIdle(ctx context.Context, lib int64, done func(kind string), kinds ...string) (jobRuns, error) {
	var job struct{ ID int64 }
	if err := v.call(ctx, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": lib}, &job); err != nil {
		return nil, err
	}
	start := time.Now()
	seen := map[string]bool{}
	var checked time.Time
	for {
		if done != nil && time.Since(checked) >= 250*time.Millisecond {
			checked = time.Now()
			runs, err := v.jobsSince(ctx, job.ID)
			if err != nil {
				return nil, err
			}
			for _, j := range runs {
				if !seen[j.kind] {
					seen[j.kind] = true
					done(j.kind)
				}
			}
		}
		idle, err := v.idle(ctx)
		if err != nil {
			return nil, err
		}
		if idle {
			runs, err := v.jobsSince(ctx, job.ID)
			if err != nil || runs.haveAll(kinds) {
				return runs, err
			}
		}
		if time.Since(start) > 2*time.Hour {
			return nil, fmt.Errorf("scale: not idle after 2 hours: %s", tail(v.c.log))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jobRun is one finished job's kind and run time.
type jobRun struct {
	kind string
	took time.Duration
}

type jobRuns []jobRun

// ran sums the run times of the jobs of kind and counts them.
func (js jobRuns) ran(kind string) (took time.Duration, n int) {
	for _, j := range js {
		if j.kind == kind {
			took += j.took
			n++
		}
	}
	return took, n
}

func (js jobRuns) haveAll(kinds []string) bool {
	for _, k := range kinds {
		if _, n := js.ran(k); n == 0 {
			return false
		}
	}
	return true
}

// jobsSince lists the jobs from id on, with their run times.
func (v *visible) jobsSince(ctx context.Context, id int64) (jobRuns, error) {
	var page struct {
		Items []struct {
			ID         int64      `json:"id"`
			Kind       string     `json:"kind"`
			Status     string     `json:"status"`
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
		} `json:"items"`
	}
	if err := v.call(ctx, "GET", "/jobs?limit=200", nil, &page); err != nil {
		return nil, err
	}
	var out jobRuns
	for _, j := range page.Items {
		if j.ID < id || j.StartedAt == nil || j.FinishedAt == nil {
			continue
		}
		if j.Status != "completed" {
			return nil, fmt.Errorf("%s job %d ended %s", j.Kind, j.ID, j.Status)
		}
		out = append(out, jobRun{kind: j.Kind, took: j.FinishedAt.Sub(*j.StartedAt)})
	}
	return out, nil
}

// peakRSS reads a process's peak RSS phase by phase, exactly: each next
// returns the kernel's high-water mark (VmHWM) and resets it by writing 5
// to /proc/<pid>/clear_refs (Linux ≥ 4.0), so the following next returns
// the peak of what ran in between, however short; no sampling, two small
// /proc accesses a phase. Where the reset is refused, exact turns false
// and each next is the peak since the process started.
type peakRSS struct {
	pid   int
	exact bool
	reads int
}

func (p *peakRSS) next() float64 {
	mb := vmHWMMB(p.pid)
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("5")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	p.exact = err == nil && (p.exact || p.reads == 0)
	p.reads++
	return mb
}

// vmHWMMB is a process's peak RSS (VmHWM) in MB, 0 when unknown.
func vmHWMMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(v), &kb)
			return kb / 1024
		}
	}
	return 0
}

func fileMB(p string) float64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / 1e6
}
