package hashing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bindery-nas/bindery/internal/backoff"
	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/pipeline"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/protocol"
)

// IOBucket is the io_rate_limits bucket every workerd's hashing draws from.
const IOBucket = "hash_io_global"

// Config configures the hash job executor. Zero values take the defaults.
type Config struct {
	// LibraryRoots are the folders every library path must lie under
	// (protocol §8); nil confines nothing. workerd passes the roots it
	// validated at startup.
	LibraryRoots pathsafe.Roots
	// BatchSize is the most files fetched, hashed and committed per
	// transaction; default 4096. Each commit rewrites index pages spread
	// over the whole table (the digests are random), so fewer, larger
	// commits cost the database less per file: 100,000 first hashes were
	// stored at 40,000 rows/s in batches of 1024 and 65,000 in batches of
	// 4096 (16,384: no better).
	BatchSize int
	// BatchBytes caps the bytes read per batch, so that a batch of large
	// files still commits (and reports progress) every few seconds; a batch
	// always holds at least one file. Default 1 GiB.
	BatchBytes int64
	// LargeFileBytes is the size from which a file is hashed alone, with
	// BLAKE3's multi-threaded hashing, instead of beside other files;
	// default 64 MiB.
	LargeFileBytes int64
	// RetryBase is the backoff after a file's first read failure; it doubles
	// with each further failure. Default 1 minute.
	RetryBase time.Duration
	// RetryMax caps the backoff; default 24 hours.
	RetryMax time.Duration
	// FlushTimeout bounds the write of already computed results after the
	// job is cancelled; default 5 seconds.
	FlushTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 4096
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 1 << 30
	}
	if c.LargeFileBytes <= 0 {
		c.LargeFileBytes = 64 << 20
	}
	if c.RetryBase <= 0 {
		c.RetryBase = time.Minute
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 24 * time.Hour
	}
	if c.FlushTimeout <= 0 {
		c.FlushTimeout = 5 * time.Second
	}
	return c
}

// Executor runs hash jobs (engine.JobExecutor).
type Executor struct {
	st  *store.Store
	hs  *hashes.Store // the hash job's rows
	cfg Config
	// afterRead, when set (tests only), runs after a file was read and
	// before its stat is taken again.
	afterRead func(path string)
	// afterPass, when set (tests only), runs when a pass has committed
	// everything.
	afterPass func(p hashes.HashPass)
}

var _ engine.JobExecutor = (*Executor)(nil)

// New returns a hash job executor over st.
func New(st *store.Store, cfg Config) *Executor {
	return &Executor{st: st, hs: hashes.New(st), cfg: cfg.withDefaults()}
}

// Counts are a hash job's result figures.
type Counts struct {
	Hashed           int64 // digests stored, both passes
	Candidates       int64 // of which in the candidate pass (possible duplicates)
	Partials         int64 // partial digests stored
	Failed           int64 // files that could not be read (backoff recorded)
	SkippedChanged   int64 // files that changed while read, still needs_hash
	Unavailable      int64 // files of a library whose root is unusable
	Bytes            int64 // bytes read into digests
	PageDigested     int64 // candidate books whose page digests were stored
	PageDigestFailed int64 // candidate books that could not be read page by page
}

// Map is the job's result JSON.
func (c Counts) Map() map[string]int64 {
	return map[string]int64{
		"hashed": c.Hashed, "candidates": c.Candidates, "partials": c.Partials, "failed": c.Failed,
		"skipped_changed": c.SkippedChanged, "unavailable": c.Unavailable, "bytes": c.Bytes,
		"page_digested": c.PageDigested, "page_digest_failed": c.PageDigestFailed,
	}
}

// run is the state of one Execute.
type run struct {
	e       *Executor
	job     model.Job
	fence   model.Fence // the job's claim, carried by every write
	alg     protocol.HashAlgorithm
	workers int // files hashed at once (scan.max_workers)
	ioDepth int // small files read at once (hash.io_depth)
	budget  *budget
	bufs    *bufList           // read-ahead buffers, kept for the whole run
	roots   map[int64]*libRoot // library id → open root; nil when unusable
	counts  Counts

	rep              engine.Reporter
	processed, total int64
	partialsStored   atomic.Int64 // counted by the partial digests' commits
	pageDigested     atomic.Int64 // counted by the page digests' writes
}

// Execute hashes every due file of the job's library (all libraries when
// library_id is NULL), duplicates first (protocol §6.4):
//
//  1. partial digests of the same-size files that need one;
//  2. the candidate pass: the due files some other present file may equal,
//     read whole; when it ends, every duplicate group is complete;
//  3. the backfill pass: every other due file, for move detection and for
//     the copies that arrive later;
//  4. page digests of the candidate books for "the same book in another
//     container" (pageDigests).
//
// Per-file failures are recorded on the file and never fail the job. On
// cancel (or a yield to a scan) the results already computed are
// committed and ctx.Err() is returned; the next attempt picks up the files
// still due, candidates first again.
func (e *Executor) Execute(ctx context.Context, job model.Job, rep engine.Reporter) (map[string]int64, error) {
	r, err := e.start(ctx, job)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if r.total, err = e.hs.CountHashCandidates(ctx, job.LibraryID, r.alg); err != nil {
		return nil, err
	}
	r.rep = rep
	rep.Progress(0, r.total)
	if err := r.partials(ctx); err != nil {
		return r.counts.Map(), err
	}
	for _, p := range []hashes.HashPass{hashes.PassCandidates, hashes.PassBackfill} {
		if err := r.pass(ctx, p); err != nil {
			return r.counts.Map(), err
		}
		if e.afterPass != nil {
			e.afterPass(p)
		}
	}
	if err := r.pageDigests(ctx); err != nil {
		return r.counts.Map(), err
	}
	return r.counts.Map(), nil
}

// pass hashes the files of pass p in id order, in batches, each hashed
// (small files in parallel, large ones alone) and committed in one
// transaction while the next one is read and hashed, and fetched while the
// one before is (pipeline.WalkAhead), so the hashing workers do not wait on the
// database.
func (r *run) pass(ctx context.Context, p hashes.HashPass) error {
	var commits pipeline.Behind
	settle := func() error {
		waited, err := commits.Wait()
		if waited {
			r.rep.Progress(r.processed, max(r.total, r.processed))
		}
		return err
	}
	pages := pipeline.WalkAhead(candidateID, func(afterID int64) ([]hashes.HashCandidate, error) {
		batch, err := r.e.hs.HashCandidates(ctx, p, r.job.LibraryID, r.alg, afterID, r.e.cfg.BatchSize)
		return capBytes(batch, r.e.cfg.BatchBytes), err
	})
	defer pages.Stop()
	for {
		batch, err := pages.Next()
		if err != nil {
			return errors.Join(err, settle())
		}
		if len(batch) == 0 {
			return settle()
		}
		done, herr := r.hashBatch(ctx, batch)
		if err := settle(); err != nil {
			return err
		}
		r.processed += int64(len(done))
		commits.Start(func() error { return r.commit(ctx, p, done) })
		if herr != nil {
			// The counts are read only once the last commit is done.
			return errors.Join(herr, settle())
		}
	}
}

func candidateID(c hashes.HashCandidate) int64 { return c.ID }

// start loads the settings and resolves the library roots.
func (e *Executor) start(ctx context.Context, job model.Job) (*run, error) {
	vals, err := settings.Load(ctx, e.st)
	if err != nil {
		return nil, fmt.Errorf("hash: %w", err)
	}
	alg, err := protocol.ParseHashAlgorithm(vals.Enum(settings.HashAlgorithm))
	if err != nil {
		return nil, fmt.Errorf("hash: %w", err)
	}
	r := &run{e: e, job: job, fence: job.Fence(), alg: alg, workers: max(vals.Workers(), 1), ioDepth: max(int(vals.Int(settings.HashIODepth)), 1), roots: map[int64]*libRoot{}}
	r.bufs = newBufList(r.ioDepth + 2*r.workers)
	if mb := vals.Int(settings.IOHashRateLimitMBs); mb > 0 {
		r.budget = &budget{st: e.st, bucket: IOBucket, rate: mb * 1_000_000}
	}
	// Every library is opened, not only the job's: the same-size twins of
	// its files, whose partial digests decide, may live anywhere (duplicate
	// groups are global).
	libs, err := e.hs.HashLibraries(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		root, err := resolveLibrary(e.cfg.LibraryRoots, l.Path)
		if err != nil && job.LibraryID != nil && l.ID == *job.LibraryID {
			r.close()
			return nil, err
		}
		r.roots[l.ID] = root // nil for an unusable root outside the job's library
	}
	if _, ok := r.roots[job.Library()]; job.LibraryID != nil && !ok {
		r.close()
		return nil, protocol.Errorf(protocol.ErrLibraryMissing, "library %d no longer exists", job.Library())
	}
	return r, nil
}

func (r *run) close() {
	for _, root := range r.roots {
		if root != nil {
			root.Close()
		}
	}
}

// commit stores a batch's outcomes; after a cancel or a yield it still
// writes them, within FlushTimeout, so the work is not lost (flushContext).
func (r *run) commit(ctx context.Context, p hashes.HashPass, done []outcome) error {
	var results []hashes.HashResult
	var failures []hashes.HashFailure
	var bytes int64
	for _, o := range done {
		switch {
		case o.unavailable:
			r.counts.Unavailable++
		case o.changed:
			r.counts.SkippedChanged++
		case o.err != nil:
			r.counts.Failed++
			failures = append(failures, hashes.HashFailure{ID: o.id, Message: o.err.Error(), Backoff: r.e.backoff})
		default:
			results = append(results, hashes.HashResult{ID: o.id, Algorithm: r.alg, Sum: o.sum, SizeBytes: o.size, MtimeNS: o.mtimeNs})
			bytes += o.size
		}
	}
	wctx, cancel, err := r.flushContext(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	stored, err := r.e.hs.RecordHashes(wctx, r.fence, results, failures)
	if err != nil {
		return err
	}
	// Rows whose recorded size/mtime no longer match what was read were
	// left due by the store: they changed between scan and hash.
	r.counts.Hashed += stored
	if p == hashes.PassCandidates {
		r.counts.Candidates += stored
	}
	r.counts.SkippedChanged += int64(len(results)) - stored
	r.counts.Bytes += bytes
	return nil
}

// flushContext is the context a batch's results are written with. While
// ctx lives it has no deadline: a slow write on a loaded machine is not a
// failure. Past a cancel or a yield it outlives ctx by at most
// FlushTimeout, so that what was read is kept. Past a lost lease there is
// none: the work is no longer this run's, and it stops with the cause (the
// store would refuse the write as well, store.ErrLeaseLost, since it
// carries the claim's fence).
func (r *run) flushContext(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if cause := context.Cause(ctx); errors.Is(cause, engine.ErrLeaseLost) {
		return nil, nil, fmt.Errorf("hash: results dropped: %w", cause)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(r.e.cfg.FlushTimeout, cancel) })
	return wctx, func() { stop(); cancel() }, nil
}

// capBytes returns the longest prefix of batch (at least one file) whose
// sizes add up to at most limit bytes.
func capBytes(batch []hashes.HashCandidate, limit int64) []hashes.HashCandidate {
	var sum int64
	for i, c := range batch {
		if sum += c.SizeBytes; sum > limit && i > 0 {
			return batch[:i]
		}
	}
	return batch
}

// backoff is RetryBase doubled per earlier failure, capped at RetryMax.
func (e *Executor) backoff(errorCount int64) time.Duration {
	return backoff.Exponential(e.cfg.RetryBase, e.cfg.RetryMax, 2, errorCount)
}
