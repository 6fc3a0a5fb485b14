// Package trash carries out delete jobs: the duplicate copies a plan names
// and controld authorized are moved into their library's trash (or, where
// the library allows it, unlinked), one at a time, each only after it and
// its group's keeper are proven on disk exactly as planned.
//
// Strategy: every path goes through an os.Root opened on the library, so
// no step can leave it, whatever symlinks or ".." a path holds. A copy is
// removed only when its size, mtime and full content still equal the
// plan's, and only while the keeper of its group, a different file, does
// too: the last present copy of a content is never removed. Each outcome is
// recorded before the next file is touched, so a killed worker's retry
// skips what is done and finds a copy it had already moved in the trash.
package trash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// Config configures the delete executor.
type Config struct {
	// LibraryRoots are the folders every library path must lie under
	// (required; the same as scanning's).
	LibraryRoots pathsafe.Roots
}

// recordTimeout bounds the write of one outcome.
const recordTimeout = 30 * time.Second

// Executor runs delete jobs.
type Executor struct {
	st  *store.Store
	cfg Config
	// beforeRemove, when set (tests), runs after a copy was verified and
	// before it is moved.
	beforeRemove func(rel string)
}

// New returns the delete executor.
func New(st *store.Store, cfg Config) *Executor { return &Executor{st: st, cfg: cfg} }

// run is one delete job.
type run struct {
	x      *Executor
	job    store.Job
	plan   store.Plan
	roots  map[int64]*os.Root
	done   map[int64]bool
	counts map[string]int64
	// keepers holds each group's keeper, by group_seq; the plan lists it
	// before the group's copies.
	keepers map[int64]*keeperCheck
}

// Execute carries out the plan the job's payload names.
func (x *Executor) Execute(ctx context.Context, job store.Job, rep engine.Reporter) (map[string]int64, error) {
	r, files, err := x.start(ctx, job)
	if err != nil {
		return nil, err
	}
	defer r.close()
	total := int64(0)
	for _, f := range files {
		if f.Decision != store.DecisionKeep {
			total++
		}
	}
	rep.Progress(0, total)
	processed := int64(0)
	for _, f := range files {
		if f.Decision == store.DecisionKeep {
			r.keepers[f.GroupSeq] = &keeperCheck{file: f}
			continue
		}
		if err := ctx.Err(); err != nil {
			return r.counts, err
		}
		if err := r.one(ctx, f); err != nil {
			return r.counts, err
		}
		processed++
		rep.Progress(processed, total)
	}
	if r.plan.Action == protocol.ActionPurge {
		r.pruneTrash(files)
	}
	return r.counts, nil
}

// one deals with one planned file, unless an earlier attempt did.
func (r *run) one(ctx context.Context, f store.PlanFile) error {
	switch {
	case r.done[f.FileID]:
		return nil
	case f.Decision == store.DecisionRestore:
		return r.restore(ctx, f)
	case f.Decision == store.DecisionPurge:
		return r.purge(f)
	}
	k := r.keepers[f.GroupSeq]
	if k == nil {
		return protocol.Errorf(protocol.ErrInvalidPayload, "plan %d lists file %d without a keeper", r.plan.ID, f.FileID)
	}
	return r.remove(ctx, f, k)
}

// start checks the job's authorization and opens the libraries it touches.
func (x *Executor) start(ctx context.Context, job store.Job) (*run, []store.PlanFile, error) {
	var p protocol.DeletePayload
	if err := protocol.DecodePayload(job.Payload, &p); err != nil {
		return nil, nil, protocol.Wrap(protocol.ErrInvalidPayload, err)
	}
	plan, err := x.st.GetPlan(ctx, p.PlanID)
	if err != nil {
		return nil, nil, protocol.Wrap(protocol.ErrInvalidPayload, err)
	}
	if !plan.JobID.Valid || plan.JobID.Int64 != job.ID {
		return nil, nil, protocol.Errorf(protocol.ErrInvalidPayload, "plan %d was not authorized for job %d", plan.ID, job.ID)
	}
	files, err := x.st.PlanFiles(ctx, plan.ID)
	if err != nil {
		return nil, nil, err
	}
	results, err := x.st.DeleteResults(ctx, job.ID)
	if err != nil {
		return nil, nil, err
	}
	r := &run{x: x, job: job, plan: plan, roots: map[int64]*os.Root{}, done: map[int64]bool{}, counts: map[string]int64{},
		keepers: map[int64]*keeperCheck{}}
	for _, res := range results {
		r.done[res.FileID] = true
		r.count(res.Outcome, 0)
	}
	checked := map[int64]bool{}
	for _, f := range files {
		if err := r.open(ctx, f.LibraryID); err != nil {
			r.close()
			return nil, nil, err
		}
		if f.Decision == store.DecisionRemove && !checked[f.LibraryID] {
			checked[f.LibraryID] = true
			if err := r.allowed(ctx, f.LibraryID); err != nil {
				r.close()
				return nil, nil, err
			}
		}
	}
	return r, files, nil
}

// open opens a library's root once.
func (r *run) open(ctx context.Context, libID int64) error {
	if _, ok := r.roots[libID]; ok {
		return nil
	}
	lib, err := r.x.st.GetLibrary(ctx, libID)
	if err != nil {
		return err
	}
	if ok, err := r.x.cfg.LibraryRoots.Contains(lib.Path); err != nil || !ok {
		return protocol.Errorf(protocol.ErrPathViolation, "library %s is not under %s", lib.Path, r.x.cfg.LibraryRoots)
	}
	root, err := os.OpenRoot(lib.Path)
	if err != nil {
		return protocol.Wrap(protocol.ErrLibraryMissing, err)
	}
	r.roots[libID] = root
	return nil
}

// allowed refuses a library that no longer allows what the plan does to
// its copies: controld checked when it authorized the plan, and an operator
// may have changed the library since.
func (r *run) allowed(ctx context.Context, libID int64) error {
	lib, err := r.x.st.GetLibrary(ctx, libID)
	switch {
	case err != nil:
		return err
	case !lib.AllowDelete:
		return protocol.Errorf(store.CodeLibraryReadOnly, "library %d no longer allows deletion", libID)
	case r.plan.Action == protocol.ActionUnlink && !lib.AllowUnlink:
		return protocol.Errorf(store.CodeUnlinkForbidden, "library %d no longer allows unlink", libID)
	}
	return nil
}

func (r *run) close() {
	for _, root := range r.roots {
		root.Close()
	}
}

func (r *run) count(o protocol.DeleteOutcome, size int64) {
	r.counts[string(o)]++
	if o.Removed() {
		r.counts["bytes_freed"] += size
	}
}

// keeperCheck is the verdict on a group's keeper, made once per group.
type keeperCheck struct {
	file    store.PlanFile
	checked bool
	id      fileID
	err     *verdict
}

// remove verifies one copy and its keeper and moves the copy out, or
// records why it stays.
func (r *run) remove(ctx context.Context, f store.PlanFile, k *keeperCheck) error {
	root := r.roots[f.LibraryID]
	trashRel := trashPath(r.job.ID, f)
	if trashed(root, f, trashRel) { // moved by an earlier attempt of this job
		return r.record(f, protocol.OutcomeTrashed, "", trashRel)
	}
	id, v := verify(ctx, root, f)
	if err := ctx.Err(); err != nil {
		return err // a read cut short by a cancel says nothing about the file
	}
	if v != nil {
		return r.record(f, v.outcome, v.message, "")
	}
	if !k.checked {
		k.id, k.err = verify(ctx, r.roots[k.file.LibraryID], k.file)
		if err := ctx.Err(); err != nil {
			return err
		}
		k.checked = true
	}
	switch {
	case k.err != nil:
		return r.record(f, protocol.OutcomeLastCopy, "the keeper "+k.file.RelativePath+" is not as planned ("+k.err.message+")", "")
	case k.id == id:
		return r.record(f, protocol.OutcomeLastCopy, "the keeper "+k.file.RelativePath+" is this same file", "")
	}
	if r.x.beforeRemove != nil {
		r.x.beforeRemove(f.RelativePath)
	}
	if r.plan.Action == protocol.ActionUnlink {
		note, err := unlink(root, f.RelativePath)
		return r.finish(f, protocol.OutcomeUnlinked, note, "", err)
	}
	note, err := moveToTrash(root, f.RelativePath, trashRel)
	return r.finish(f, protocol.OutcomeTrashed, note, trashRel, err)
}

// finish records a removal, or why it failed. A read-only file system
// stops the job: nothing else can be moved either.
func (r *run) finish(f store.PlanFile, done protocol.DeleteOutcome, note, trashRel string, err error) error {
	switch {
	case err == nil:
		return r.record(f, done, note, trashRel)
	case errors.Is(err, syscall.EROFS):
		if rerr := r.record(f, protocol.OutcomeReadOnly, err.Error(), ""); rerr != nil {
			return rerr
		}
		return protocol.Errorf(protocol.ErrReadOnlyFS, "library %d is mounted read-only: %v", f.LibraryID, err)
	}
	return r.record(f, protocol.OutcomeIOError, err.Error(), "")
}

func (r *run) record(f store.PlanFile, o protocol.DeleteOutcome, msg, trashRel string) error {
	res := store.DeleteResult{JobID: r.job.ID, FileID: f.FileID, Outcome: o, Message: msg}
	if trashRel != "" {
		res.TrashPath.String, res.TrashPath.Valid = trashRel, true
	}
	// The outcome is stored even when the job is being cancelled: the file
	// has already moved.
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := r.x.st.RecordDeleteResult(ctx, res); err != nil {
		return err
	}
	r.count(o, f.SizeBytes)
	return nil
}

// fileID identifies a file on disk: two paths with the same are one file.
type fileID struct{ dev, ino uint64 }

// verdict is why a file is not as planned.
type verdict struct {
	outcome protocol.DeleteOutcome
	message string
}

// verify proves that rel is a regular file with the plan's size, mtime and
// content, and returns its identity on disk.
func verify(ctx context.Context, root *os.Root, f store.PlanFile) (fileID, *verdict) {
	fi, err := root.Lstat(f.RelativePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileID{}, &verdict{protocol.OutcomeMissing, "not found at " + f.RelativePath}
	case err != nil:
		return fileID{}, &verdict{protocol.OutcomePathViolation, err.Error()}
	case !fi.Mode().IsRegular():
		return fileID{}, &verdict{protocol.OutcomePathViolation, "not a regular file (" + fi.Mode().Type().String() + ")"}
	case fi.Size() != f.SizeBytes || fi.ModTime().UnixNano() != f.MtimeNS:
		return fileID{}, &verdict{protocol.OutcomeChanged, fmt.Sprintf("size %d, mtime %d; the plan saw %d, %d",
			fi.Size(), fi.ModTime().UnixNano(), f.SizeBytes, f.MtimeNS)}
	}
	file, err := root.OpenFile(f.RelativePath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fileID{}, &verdict{protocol.OutcomeIOError, err.Error()}
	}
	defer file.Close()
	sum, err := hashing.Reader(ctx, file, f.HashAlgorithm)
	if err != nil {
		return fileID{}, &verdict{protocol.OutcomeIOError, err.Error()}
	}
	after, err := file.Stat()
	if err != nil || !bytes.Equal(sum, f.ContentHash) || !os.SameFile(fi, after) ||
		after.Size() != f.SizeBytes || after.ModTime().UnixNano() != f.MtimeNS {
		return fileID{}, &verdict{protocol.OutcomeChanged, "its content is not the plan's"}
	}
	st, _ := after.Sys().(*syscall.Stat_t)
	if st == nil {
		return fileID{}, &verdict{protocol.OutcomeIOError, "no file identity on this system"}
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, nil
}
