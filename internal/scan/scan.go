// Package scan is the scan job executor of workerd: it turns a library
// folder into library_files, series and file_metadata rows.
//
// Strategy: a scan is a sequence of phases, each streaming over the
// database in batches and each idempotent, so that memory stays bounded on
// a library of any size and a scan killed at any point converges, when run
// again, to the rows an uninterrupted scan would have written:
//
//  1. discover: walk + merge with the rows by (relative_path, size, mtime);
//     new, changed, restored and missing rows (discover.go);
//  2. moves: new rows that are a missing row moved elsewhere (moves.go);
//  3. analyze: page count and ComicInfo.xml of new/changed rows, in
//     parallel (analyze.go);
//  4. purge: rows missing longer than scan.missing.purge_after_days, whose
//     covers were cleaned up, are deleted (purge.go);
//  5. series: one series per case-folded (name, publisher), created one at
//     a time in name order, first file by path wins (series.go);
//  6. link: files to series, counts, empty series removed (series.go);
//  7. covers: files without a cover marked when regenerate_missing=1.
//
// Covers themselves are policy: the scan only sets needs_cover; controld
// admits thumbnail rows.
package scan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/protocol"
)

// Config configures the executor. Zero values take the documented
// defaults.
type Config struct {
	// LibraryRoots are workerd's --library-root folders: every library
	// path must resolve (realpath) inside one of them, else the scan fails
	// with path_violation. Nil confines nothing; workerd passes the roots
	// it validated at startup.
	LibraryRoots pathsafe.Roots
	// BatchSize is the number of rows written per transaction and read per
	// page. Default 500.
	BatchSize int
	// StateDir is workerd's state folder. When set, a scan with
	// scan.cover.regenerate_missing=1 also marks files whose cover file
	// has gone from <state>/covers (a deleted cache is rebuilt by a
	// rescan). Default "": only files that never had a cover are marked.
	StateDir string
}

// Executor runs scan jobs. It is safe for concurrent use, though the
// protocol allows one scan at a time.
type Executor struct {
	st  *store.Store
	sc  *scanning.Store // the scan job's rows
	cfg Config
}

var _ engine.JobExecutor = (*Executor)(nil)

// New returns a scan executor over st.
func New(st *store.Store, cfg Config) *Executor {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	return &Executor{st: st, sc: scanning.New(st), cfg: cfg}
}

// run is the state of one scan.
type run struct {
	ctx context.Context
	st  *store.Store
	sc  *scanning.Store
	// fence is the job's claim: every write of the scan carries it, and
	// the store refuses it (store.ErrLeaseLost) once the lease is lost.
	fence     model.Fence
	cfg       Config
	vals      settings.Values
	rep       engine.Reporter
	libID     int64
	root      string
	force     bool
	coverMode bool
	// video: the library indexes video files (libraries.media).
	video bool
	// paths: the folders a scoped scan covers (nil: the whole library).
	paths   []string
	session model.Scan
	counts  model.ScanCounts
}

// Execute scans the job's library. The result is the session's counts. On
// cancel (ctx done) it returns ctx.Err(), every finished batch kept and the
// session closed as failed with code cancelled.
func (e *Executor) Execute(ctx context.Context, job model.Job, rep engine.Reporter) (map[string]int64, error) {
	var p protocol.ScanPayload
	if err := protocol.DecodePayload(job.Payload, &p); err != nil {
		return nil, protocol.Wrap(protocol.ErrInvalidPayload, err)
	}
	paths, err := protocol.NormalizeScanPaths(p.Paths)
	if err != nil || !slices.Equal(paths, p.Paths) {
		return nil, protocol.Errorf(protocol.ErrInvalidPayload, "scan job %d: paths %q are not normalized folders (%v)", job.ID, p.Paths, err)
	}
	if job.LibraryID == nil {
		return nil, protocol.Errorf(protocol.ErrInvalidPayload, "scan job %d names no library", job.ID)
	}
	vals, err := settings.Load(ctx, e.st)
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	r := &run{ctx: ctx, st: e.st, sc: e.sc, fence: job.Fence(), cfg: e.cfg, vals: vals, rep: rep, libID: job.Library(), force: p.Force, paths: paths,
		coverMode: vals.Enum(settings.ScanCoverMode) == "scan"}
	if r.root, r.video, err = e.resolveLibrary(ctx, r.libID); err != nil {
		return nil, err
	}
	r.session, err = e.sc.StartScanSession(ctx, r.fence, r.libID)
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	runErr := r.phases(ctx)
	status, code, msg := protocol.ScanSucceeded, "", ""
	if runErr != nil {
		status, code, msg = protocol.ScanFailed, protocol.CodeOf(runErr, protocol.ErrExecutorFailed), runErr.Error()
		if ctx.Err() != nil {
			code, msg, runErr = protocol.ErrCancelled, "scan cancelled", ctx.Err()
		}
	}
	if err := e.sc.FinishScanSession(context.WithoutCancel(ctx), r.fence, r.session.ID, status, r.counts, code, msg); err != nil {
		return r.counts.Map(), errors.Join(runErr, err)
	}
	return r.counts.Map(), runErr
}

func (r *run) phases(ctx context.Context) error {
	d := &discover{run: r}
	if err := d.do(ctx); err != nil {
		return err
	}
	if r.vals.Enum(settings.ScanHashMode) == "full" {
		if err := r.detectMoves(ctx); err != nil {
			return err
		}
	}
	if err := r.analyze(ctx); err != nil {
		return err
	}
	if err := r.purge(ctx); err != nil {
		return err
	}
	ids, err := r.createSeries(ctx)
	if err != nil {
		return err
	}
	if err := r.linkSeries(ctx, ids); err != nil {
		return err
	}
	if r.coverMode && r.vals.Flag(settings.ScanCoverRegenerateMissing) {
		return r.markMissingCovers(ctx)
	}
	return nil
}

// markMissingCovers is phase 6: files that never had a cover, and (with a
// state dir) files whose cover file is no longer in the cache, get
// needs_cover so that controld admits a render.
func (r *run) markMissingCovers(ctx context.Context) error {
	for {
		n, err := r.sc.MarkCoversMissing(ctx, r.fence, r.libID, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		if n < int64(r.cfg.BatchSize) {
			break
		}
	}
	if r.cfg.StateDir == "" {
		return nil
	}
	for after := int64(0); ; {
		covers, err := r.sc.CoveredFiles(ctx, r.libID, after, r.cfg.BatchSize)
		if err != nil || len(covers) == 0 {
			return err
		}
		after = covers[len(covers)-1].FileID
		var lost []int64
		for _, c := range covers {
			if !c.OutputRelPath.Valid {
				lost = append(lost, c.FileID)
			} else if _, err := os.Stat(filepath.Join(r.cfg.StateDir, filepath.FromSlash(c.OutputRelPath.String))); errors.Is(err, os.ErrNotExist) {
				lost = append(lost, c.FileID)
			}
		}
		if err := r.sc.MarkNeedsCover(ctx, r.fence, lost); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// resolveLibrary returns the real path of a library, which must be an
// existing folder inside the configured library root, and whether it
// indexes video files.
func (e *Executor) resolveLibrary(ctx context.Context, id int64) (string, bool, error) {
	lib, err := e.st.GetLibrary(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", false, protocol.Errorf(protocol.ErrLibraryMissing, "library %d does not exist", id)
		}
		return "", false, fmt.Errorf("scan: %w", err)
	}
	real, err := realLibraryPath(lib.Path, e.cfg.LibraryRoots)
	return real, lib.Media.Video(), err
}

// realLibraryPath resolves a library folder p, which must lie in roots.
func realLibraryPath(p string, roots pathsafe.Roots) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", protocol.Errorf(protocol.ErrLibraryMissing, "library folder %s: %v", p, err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", protocol.Wrap(protocol.ErrLibraryMissing, err)
	}
	if info, err := os.Stat(real); err != nil || !info.IsDir() {
		return "", protocol.Errorf(protocol.ErrLibraryMissing, "library folder %s is not a readable folder", p)
	}
	if ok, err := roots.Contains(real); err != nil || !ok {
		return "", protocol.Errorf(protocol.ErrPathViolation, "library folder %s is not inside the library roots %s", p, roots)
	}
	return real, nil
}

// progress reports to the engine, which writes it on its next heartbeat.
func (r *run) progress(processed, total int64) {
	if r.rep != nil {
		r.rep.Progress(processed, total)
	}
}

// statFile stats abs as discovery does.
func statFile(abs, rel string, role protocol.FileRole) (scanning.FileStat, error) {
	info, err := os.Stat(abs)
	if err != nil {
		return scanning.FileStat{}, err
	}
	return statOf(rel, info, role), nil
}
