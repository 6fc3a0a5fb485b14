// Package chaos is Bindery's crash harness: it runs the real controld and
// two real workerd binaries on a generated library of comics and videos,
// SIGKILLs them at random moments while scan, hash and covers run (one
// or more while a worker runs ffprobe or ffmpeg), freezes one worker
// past its lease (a zombie), and then proves that nothing was lost or
// written twice: every row terminal, one active scan/hash at most, an
// intact database, the same file rows (video probes included), cover
// outcomes and duplicate groups as a clean run, decodable covers, no
// ffmpeg/ffprobe outliving its worker and an untouched library.
//
// The strategy is black-box on purpose: the harness only uses what an
// operator has (the binaries, signals, the admin API and a read-only view
// of the database), so a passing run says something about the product,
// not about test doubles. The one write it makes as an operator is pulling
// the retry time of retryable jobs forward (fastForward), so that dozens
// of kills do not turn into hours of attempt⁴ back-off.
package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
	"github.com/bindery-nas/bindery/internal/fixtures"
)

// Config is one harness run. Zero values take the smoke defaults.
type Config struct {
	// Dir is the work folder (binaries, libraries, state, logs); required.
	Dir string
	// Bin is a folder holding prebuilt controld and workerd; default: build
	// them into Dir/bin.
	Bin string
	// Files is the library size (default 150); Broken of them are broken
	// (default Files/15).
	Files, Broken int
	// PageW and PageH size the generated pages (default 480×720), large
	// enough that analysis, hashing and renders take long enough to be
	// interrupted.
	PageW, PageH int
	// WorkerKills is how many times a random workerd is SIGKILLed (default
	// 6); ControlKills how many times controld is (default 2).
	WorkerKills, ControlKills int
	// Lease is the workers' --lease (default 3s), short so that recovery is
	// quick.
	Lease time.Duration
	// MinGap and MaxGap bound the random pause between two faults
	// (default 300ms and 1.5s).
	MinGap, MaxGap time.Duration
	// DrainTimeout bounds the final drain (default 3m).
	DrainTimeout time.Duration
	// DeleteGroups is the size of the duplicate library of the delete
	// phase (default 200 groups of two or three copies); DeleteKills how
	// many times the worker running its delete job is SIGKILLed (default 3).
	DeleteGroups, DeleteKills int
	// Repacks is how many books get a repack beside them (default 4): the
	// same pages in another zip, which the hash job's last phase digests
	// (issue 38), so that faults land in that phase too.
	Repacks int
	// Videos is how many videos the library holds besides the Files
	// (default 6: every outcome once; negative: none); VideoKills how many
	// workerd SIGKILLs land while the worker runs ffprobe or ffmpeg, in
	// turn (default 2): among the WorkerKills when one can be caught,
	// else after them while video work is left.
	Videos, VideoKills int
	// Database, when set, puts each run (named "clean" or "chaos") on a
	// PostgreSQL database of its own: control is controld's URL (the
	// schema's owner), worker the URL of the role workerd connects as,
	// which controld migrate --worker-role creates. Default: an SQLite
	// file in each run's state folder.
	Database func(run string) (control, worker string, err error)
	// Seed makes the fault schedule reproducible (default: the clock).
	Seed uint64
	// Log receives progress lines (default io.Discard).
	Log io.Writer
}

func (c Config) withDefaults() Config {
	if c.Files <= 0 {
		c.Files = 150
	}
	if c.Broken <= 0 {
		c.Broken = max(1, c.Files/15)
	}
	if c.PageW <= 0 || c.PageH <= 0 {
		c.PageW, c.PageH = 480, 720
	}
	if c.WorkerKills <= 0 {
		c.WorkerKills = 6
	}
	if c.ControlKills <= 0 {
		c.ControlKills = 2
	}
	if c.Lease <= 0 {
		c.Lease = 3 * time.Second
	}
	if c.MinGap <= 0 {
		c.MinGap = 300 * time.Millisecond
	}
	if c.MaxGap <= c.MinGap {
		c.MaxGap = max(c.MinGap*2, 1500*time.Millisecond)
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 3 * time.Minute
	}
	if c.DeleteGroups <= 0 {
		c.DeleteGroups = 200
	}
	if c.DeleteKills <= 0 {
		c.DeleteKills = 3
	}
	if c.Videos == 0 {
		c.Videos = checks.DefaultVideos
	}
	if c.VideoKills <= 0 {
		c.VideoKills = 2
	}
	if c.Repacks == 0 {
		c.Repacks = 4
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Report is what a run measured and proved.
type Report struct {
	Seed                         uint64
	Files, Broken, Videos        int
	Repacks                      int // repacks written beside their books
	WorkerKills, KillsWithWork   int
	VideoKills                   int // worker kills while it ran ffmpeg/ffprobe
	ControlKills, Reworks        int
	ZombieRows                   int
	Recoveries                   map[string]int // observed lease hand-overs per table
	LeaseExpiredJobs             int64          // job rows seen with error_code lease_expired
	Retries                      int64          // sum of attempt-1 over scan/hash jobs
	Yields                       int64          // hash jobs that yielded to a waiting scan
	FastForwards                 int64
	Samples, SampleErrors        int
	MaxActiveScanHash            int64
	DeleteKills, DeleteZombies   int
	UserWrites                   int // files a user changed while the delete job ran
	CleanDuration, ChaosDuration time.Duration
	Checks                       []checks.Check
}

// OK reports whether every invariant held.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos summary (seed %d)\n", r.Seed)
	fmt.Fprintf(&b, "  library: %d files, %d broken, %d videos; clean run %v, chaos run %v\n", r.Files, r.Broken, r.Videos,
		r.CleanDuration.Round(time.Second), r.ChaosDuration.Round(time.Second))
	fmt.Fprintf(&b, "  faults: %d workerd SIGKILLs (%d while holding a lease, %d while running ffmpeg/ffprobe), %d controld SIGKILLs, 1 SIGSTOP zombie holding %d rows, %d rework rounds\n",
		r.WorkerKills, r.KillsWithWork, r.VideoKills, r.ControlKills, r.ZombieRows, r.Reworks)
	tables := make([]string, 0, len(r.Recoveries))
	for t, n := range r.Recoveries {
		tables = append(tables, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(tables)
	fmt.Fprintf(&b, "  recoveries seen: %s; job rows seen lease_expired: %d; scan/hash retries (attempt-1): %d; retry times pulled forward: %d; hash yields to scans: %d\n",
		strings.Join(tables, ", "), r.LeaseExpiredJobs, r.Retries, r.FastForwards, r.Yields)
	fmt.Fprintf(&b, "  delete phase: %d workerd SIGKILLs, %d SIGSTOP zombies and %d files changed by a user while the delete job ran\n",
		r.DeleteKills, r.DeleteZombies, r.UserWrites)
	fmt.Fprintf(&b, "  sampler: %d samples, %d errors, max active scan/hash rows %d\n", r.Samples, r.SampleErrors, r.MaxActiveScanHash)
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return b.String()
}

// Run executes the harness. An error means the harness itself could not
// run; broken invariants are in the report (Report.OK).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return nil, fmt.Errorf("chaos: Config.Dir is required")
	}
	r := &Report{Seed: cfg.Seed, Files: cfg.Files, Broken: cfg.Broken}
	h := &harness{cfg: cfg, r: r, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	if err := h.prepare(ctx); err != nil {
		return r, err
	}
	before, err := checks.Checksums(h.lib)
	if err != nil {
		return r, err
	}
	want, err := h.cleanRun(ctx)
	if err != nil {
		return r, fmt.Errorf("clean run: %w", err)
	}
	if err := h.chaosRun(ctx); err != nil {
		return r, fmt.Errorf("chaos run: %w", err)
	}
	defer h.ro.Close()
	defer h.op.Close()
	if err := h.verify(ctx, want, before); err != nil {
		return r, err
	}
	if err := h.deletePhase(ctx); err != nil {
		return r, fmt.Errorf("delete phase: %w", err)
	}
	return r, nil
}

type harness struct {
	cfg  Config
	r    *Report
	rng  *rand.Rand
	bin  string
	lib  string // the chaos library
	root string // its library root
	c    *cluster
	ro   *sql.DB
	op   *sql.DB
	smp  *checks.Sampler
	lid  int64

	zombieState *zombieState
	videos      []checks.VideoFile // the library's videos and what they must give
	videoKilled []string           // workers SIGKILLed while running ffmpeg/ffprobe
	orphans     []string           // ffmpeg/ffprobe processes that outlived their workerd
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.cfg.Log, "chaos: "+format+"\n", args...)
}

// prepare builds the binaries and generates the library and its copy.
func (h *harness) prepare(ctx context.Context) error {
	h.bin = h.cfg.Bin
	if h.bin == "" {
		h.bin = filepath.Join(h.cfg.Dir, "bin")
		h.logf("building controld and workerd into %s", h.bin)
		if err := Build(ctx, h.bin); err != nil {
			return err
		}
	}
	h.root = filepath.Join(h.cfg.Dir, "libraries")
	h.lib = filepath.Join(h.root, "comics")
	if err := os.MkdirAll(h.lib, 0o755); err != nil {
		return err
	}
	start := time.Now()
	if _, err := fixtures.Library(h.lib, fixtures.LibrarySpec{Files: h.cfg.Files, Broken: h.cfg.Broken,
		Page: fixtures.PageOptions{W: h.cfg.PageW, H: h.cfg.PageH}}); err != nil {
		return fmt.Errorf("generate library: %w", err)
	}
	var err error
	if h.r.Repacks, err = checks.WriteRepacks(h.lib, h.cfg.Repacks); err != nil {
		return fmt.Errorf("write repacks: %w", err)
	}
	h.logf("generated %d files (%d broken, %d repacks) in %v", h.cfg.Files, h.cfg.Broken, h.r.Repacks, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	vids, err := checks.WriteVideos(h.lib, filepath.Join(h.cfg.Dir, "video-sources"), h.cfg.Videos, int(h.cfg.Seed%1000))
	if err != nil {
		return fmt.Errorf("generate videos: %w", err)
	}
	h.videos, h.r.Videos = vids, len(vids)
	h.logf("generated %d videos in %v", len(vids), time.Since(start).Round(time.Millisecond))
	return checks.CopyTree(h.lib, filepath.Join(h.cfg.Dir, "clean-libraries", "comics"))
}

// placeDatabase puts the run's cluster on the database Config.Database
// gives it, if any.
func (h *harness) placeDatabase(ctx context.Context, c *cluster) error {
	if h.cfg.Database == nil {
		return nil
	}
	control, worker, err := h.cfg.Database(c.name)
	if err != nil {
		return err
	}
	return c.usePostgres(ctx, control, worker)
}

// runSettings are applied to both runs: many attempts, so that a scan
// killed again and again still completes (max_attempts_exceeded would be a
// legitimate end, but not one the clean run can be compared with).
var runSettings = map[string]any{"jobs.max_attempts": 100}

// chaosSettings slow hashing down to 1 MB/s in the chaos run (a hash of the
// library then takes seconds), so that kills land in both hash passes and
// scans requested by keepBusy find a hash job to yield.
var chaosSettings = map[string]any{"jobs.max_attempts": 100, "io.hash_rate_limit_mb_s": 1}

// cleanRun indexes the copy with one controld and one workerd and nothing
// going wrong; its file rows, covers and duplicate groups are the
// reference.
func (h *harness) cleanRun(ctx context.Context) (checks.RunState, error) {
	start := time.Now()
	root := filepath.Join(h.cfg.Dir, "clean-libraries")
	c, err := newCluster("clean", filepath.Join(h.cfg.Dir, "clean"), h.bin, root, h.cfg.Lease)
	if err != nil {
		return checks.RunState{}, err
	}
	defer c.killAll()
	if err := h.placeDatabase(ctx, c); err != nil {
		return checks.RunState{}, err
	}
	if err := c.startControl(ctx); err != nil {
		return checks.RunState{}, err
	}
	if _, err := c.startWorker("w"); err != nil {
		return checks.RunState{}, err
	}
	lid, err := c.setup(ctx, filepath.Join(root, "comics"), runSettings)
	if err != nil {
		return checks.RunState{}, err
	}
	if err := c.requestScan(ctx, lid); err != nil {
		return checks.RunState{}, err
	}
	ro, err := checks.OpenRO(c.db)
	if err != nil {
		return checks.RunState{}, err
	}
	defer ro.Close()
	// Nothing kills a daemon in the clean run: one that exits ends the
	// wait at once, not after the drain timeout.
	w := c.worker("w")
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-w.done:
			stop(fmt.Errorf("%s exited during the clean run: %v", w.name, w.exitErr()))
		case <-wctx.Done():
		}
	}()
	if _, err := checks.WaitDrained(wctx, ro, 3*time.Second, h.cfg.DrainTimeout, nil); err != nil {
		if ctx.Err() == nil && context.Cause(wctx) != nil {
			err = context.Cause(wctx)
		}
		return checks.RunState{}, fmt.Errorf("%w\n%s", err, w.tail(30))
	}
	if err := c.stopAll(); err != nil {
		return checks.RunState{}, err
	}
	h.checkOrphans(c, 2*time.Second)
	state, err := checks.ReadState(ctx, ro)
	h.r.CleanDuration = time.Since(start)
	h.logf("clean run: %d file rows in %v", len(state.Files), h.r.CleanDuration.Round(time.Millisecond))
	return state, err
}

// chaosRun starts controld and two workers on the library, requests the
// scan and injects faults until the configured counts are reached, then
// restarts everything cleanly and lets the work drain.
func (h *harness) chaosRun(ctx context.Context) (err error) {
	start := time.Now()
	defer func() { h.r.ChaosDuration = time.Since(start) }()
	c, err := newCluster("chaos", filepath.Join(h.cfg.Dir, "chaos"), h.bin, h.root, h.cfg.Lease)
	if err != nil {
		return err
	}
	h.c = c
	defer func() {
		if err != nil {
			c.killAll() // a failed run (say, not drained) must not leave its daemons running
		}
	}()
	if err := h.placeDatabase(ctx, c); err != nil {
		return err
	}
	if err := c.startControl(ctx); err != nil {
		return err
	}
	for _, slot := range []string{"a", "b"} {
		if _, err := c.startWorker(slot); err != nil {
			return err
		}
	}
	if h.ro, err = checks.OpenRO(c.db); err != nil {
		return err
	}
	if h.op, err = checks.OpenOperator(c.db); err != nil {
		return err
	}
	if h.lid, err = c.setup(ctx, h.lib, chaosSettings); err != nil {
		return err
	}
	sctx, stopSampler := context.WithCancel(ctx)
	h.smp = checks.NewSampler(h.ro)
	sampled := make(chan struct{})
	go func() { defer close(sampled); h.smp.Run(sctx, 100*time.Millisecond) }()
	defer func() { stopSampler(); <-sampled }()
	if err := c.requestScan(ctx, h.lid); err != nil {
		return err
	}
	if err := h.faults(ctx); err != nil {
		return err
	}
	if err := h.videoKills(ctx); err != nil {
		return err
	}
	return h.finish(ctx)
}

// finish restarts everything cleanly, switches hash.algorithm back, lets
// the work drain, and stops the daemons gracefully (controld first, so
// that nothing new is admitted while the workers finish).
func (h *harness) finish(ctx context.Context) error {
	c := h.c
	h.logf("faults done; restarting everything cleanly")
	if h.r.Reworks%2 == 1 {
		if err := c.api(ctx, "PATCH", "/settings", map[string]any{"hash.algorithm": "blake3"}, nil); err != nil {
			return err
		}
		if err := c.api(ctx, "POST", "/jobs", map[string]any{"kind": "hash", "library_id": h.lid}, nil); err != nil {
			return err
		}
	}
	if err := c.stopAll(); err != nil {
		h.logf("graceful stop after chaos: %v", err)
	}
	if err := c.startControl(ctx); err != nil {
		return err
	}
	for _, slot := range []string{"a", "b"} {
		if _, err := c.startWorker(slot); err != nil {
			return err
		}
	}
	tick := func() {
		n, _ := checks.FastForward(ctx, h.op)
		h.r.FastForwards += n
	}
	if _, err := checks.WaitDrained(ctx, h.ro, 3*time.Second, h.cfg.DrainTimeout, tick); err != nil {
		return fmt.Errorf("%w\n%s", err, c.control().tail(20))
	}
	if err := c.control().terminate(30 * time.Second); err != nil {
		return err
	}
	if _, err := checks.WaitDrained(ctx, h.ro, time.Second, time.Minute, nil); err != nil {
		return err
	}
	for _, slot := range []string{"a", "b"} {
		if err := c.worker(slot).terminate(30 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

// verify checks the invariants on the stopped system.
func (h *harness) verify(ctx context.Context, want checks.RunState, before map[string]string) error {
	r := h.r
	r.Samples, r.SampleErrors, r.MaxActiveScanHash, r.Recoveries = h.smp.Snapshot()
	r.LeaseExpiredJobs = h.smp.LeaseExpiredJobs()
	if err := h.ro.QueryRowContext(ctx, `SELECT coalesce(sum(attempt - 1), 0),
		(SELECT count(*) FROM jobs WHERE kind = 'hash' AND result LIKE '%"yielded":1%')
		FROM jobs WHERE kind IN ('scan','hash')`).Scan(&r.Retries, &r.Yields); err != nil {
		return err
	}
	r.Checks = append(r.Checks,
		checks.Check{Name: "at most one active scan/hash row at every sample", OK: r.MaxActiveScanHash <= 1 && r.Samples > 0,
			Detail: fmt.Sprintf("max %d over %d samples", r.MaxActiveScanHash, r.Samples)},
		checks.CheckTerminal(ctx, h.ro), checks.CheckIntegrity(ctx, h.c.db), h.checkLastJobs(ctx), checkOwnerRecorded(ctx, h.ro),
		checks.CheckDigests(ctx, h.ro), checks.CheckPageDigests(ctx, h.ro))
	got, err := checks.ReadState(ctx, h.ro)
	if err != nil {
		return err
	}
	r.Checks = append(r.Checks, checks.CompareFiles(got.Files, want.Files), checks.CompareCovers(got.Covers, want.Covers),
		checks.CompareGroups(got, want), checks.CompareSameBooks(got.SameBooks, want.SameBooks, h.r.Repacks), checks.CheckVideos(got, h.videos), checks.CheckCovers(ctx, h.ro, h.c.state), checks.CheckTemps(h.c.state),
		h.orphanCheck())
	after, err := checks.Checksums(h.lib)
	if err != nil {
		return err
	}
	r.Checks = append(r.Checks, checks.CompareChecksums(before, after), h.zombieCheck(ctx))
	return nil
}

// checkLastJobs: the last scan and hash of the library completed.
func (h *harness) checkLastJobs(ctx context.Context) checks.Check {
	c := checks.Check{Name: "last scan and hash completed"}
	var scan, hash string
	err := h.ro.QueryRowContext(ctx, `SELECT
		(SELECT status FROM jobs WHERE kind = 'scan' ORDER BY id DESC LIMIT 1),
		(SELECT status FROM jobs WHERE kind = 'hash' ORDER BY id DESC LIMIT 1)`).Scan(&scan, &hash)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	c.OK = scan == "completed" && hash == "completed"
	c.Detail = fmt.Sprintf("scan %s, hash %s", scan, hash)
	return c
}

// checkOwnerRecorded: a finish keeps worker_id and recovery clears it, so
// a completed job or ready cover without a worker_id would have been
// finished by someone whose lease had been taken back.
func checkOwnerRecorded(ctx context.Context, db *sql.DB) checks.Check {
	c := checks.Check{Name: "every completed job / ready cover names the worker that finished it"}
	var jobs, thumbs int64
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM jobs WHERE status = 'completed' AND worker_id IS NULL),
		(SELECT count(*) FROM thumbnails WHERE status = 'ready' AND worker_id IS NULL)`).Scan(&jobs, &thumbs)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	c.OK = jobs+thumbs == 0
	c.Detail = fmt.Sprintf("%d jobs, %d covers without one", jobs, thumbs)
	return c
}
