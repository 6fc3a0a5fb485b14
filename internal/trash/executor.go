// Package trash carries out delete jobs: the duplicate copies a plan names
// and controld authorized are moved into their library's trash (or, where
// the library allows it, unlinked), each only after it and its group's
// keeper are proven on disk exactly as planned.
//
// Strategy (protocol §4.2.1). Every path goes through an os.Root opened on
// the library, so no step can leave it. controld claimed every file of the
// plan for this job, keepers included, so no other running plan removes a
// keeper or moves a copy. A copy is opened, hashed from that open file and
// moved by no-replace rename; after the move, the trash entry must be the
// file that was hashed, unchanged, or it goes back. Before each copy moves
// the keeper's identity (device, inode, size, mtime, ctime) must still be
// what its full hash saw, and once more when the group's copies are all
// staged in the trash: if it changed, they go back. unlink is "trash, then
// unlink" after that last check. The intended trash path of a copy is
// recorded before it moves, and every run of the job, however it ends,
// reconciles what its intents left from the disk.
//
// A same_pages plan (issue 38) keeps every step above, with each file
// proven against its own planned digest, and adds one: both books are
// decompressed again from their open files and the copy goes only when
// its ordered page digests are its keeper's (samepages.go).
package trash

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/protocol"
)

// Config configures the delete executor.
type Config struct {
	// LibraryRoots are the folders every library path must lie under
	// (required; the same as scanning's).
	LibraryRoots pathsafe.Roots
}

// recordTimeout bounds the write of outcomes made after a cancel.
const recordTimeout = 30 * time.Second

// Executor runs delete jobs.
type Executor struct {
	st  *store.Store
	dp  *duplicates.Store
	cfg Config
	// beforeRemove, when set (tests), runs after a copy and its keeper
	// were verified and before the copy is moved.
	beforeRemove func(rel string)
	// beforeSettle, when set (tests), runs when a group's copies are
	// staged in the trash, before the keeper's last check.
	beforeSettle func()
	// afterMove, when set (tests), runs when a copy has moved into the
	// trash, before it is checked there.
	afterMove func(rel string)
}

// New returns the delete executor.
func New(st *store.Store, cfg Config) *Executor {
	return &Executor{st: st, dp: duplicates.New(st), cfg: cfg}
}

// run is one delete job.
type run struct {
	x     *Executor
	job   model.Job
	plan  model.Plan
	files []model.PlanFile
	roots map[int64]*os.Root
	done  map[int64]bool
	// size is each planned file's size, by id.
	size map[int64]int64
	// made are the trash folders this run made, by library.
	made map[int64]map[string]bool
	// counts are the job's result: outcomes, and bytes_freed.
	counts map[string]int64
}

// Execute carries out the plan the job's payload names.
func (x *Executor) Execute(ctx context.Context, job model.Job, rep engine.Reporter) (map[string]int64, error) {
	r, err := x.start(ctx, job)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.reconcile(ctx); err != nil {
		return r.counts, err
	}
	// However the run ends, what its intents left is settled before the
	// job is: a cancel lets the file in hand finish, then this runs.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		_ = r.reconcile(rctx)
	}()
	total := int64(0)
	for _, f := range r.files {
		if f.Decision != protocol.DecisionKeep {
			total++
		}
	}
	rep.Progress(0, total)
	processed := int64(0)
	progress := func(n int) {
		processed += int64(n)
		rep.Progress(processed, total)
	}
	switch r.plan.Action {
	case protocol.ActionRestore, protocol.ActionPurge:
		err = r.trashPlan(ctx, progress)
	default:
		err = r.removals(ctx, progress)
	}
	return r.counts, err
}

// Reconcile settles, from the disk, the intents a job left (a crash, a
// failed write) when the job is cancelled before it runs again.
func (x *Executor) Reconcile(ctx context.Context, job model.Job) error {
	r, err := x.start(ctx, job)
	if err != nil {
		return err
	}
	defer r.close()
	return r.reconcile(ctx)
}

// trashPlan carries out a restore or purge, one file at a time.
func (r *run) trashPlan(ctx context.Context, progress func(int)) error {
	for _, f := range r.files {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch {
		case r.done[f.FileID]:
		case f.Decision == protocol.DecisionRestore:
			err = r.restore(ctx, f)
		case f.Decision == protocol.DecisionPurge:
			err = r.purge(ctx, f)
		}
		if err != nil {
			return err
		}
		progress(1)
	}
	if r.plan.Action == protocol.ActionPurge {
		r.pruneTrash()
	}
	return nil
}

// start checks the job's authorization and opens the libraries it touches.
func (x *Executor) start(ctx context.Context, job model.Job) (*run, error) {
	var p protocol.DeletePayload
	if err := protocol.DecodePayload(job.Payload, &p); err != nil {
		return nil, protocol.Wrap(protocol.ErrInvalidPayload, err)
	}
	plan, err := x.dp.GetPlan(ctx, p.PlanID)
	if err != nil {
		return nil, protocol.Wrap(protocol.ErrInvalidPayload, err)
	}
	if plan.JobID == nil || model.Deref(plan.JobID) != job.ID {
		return nil, protocol.Errorf(protocol.ErrInvalidPayload, "plan %d was not authorized for job %d", plan.ID, job.ID)
	}
	if err := x.dp.CheckPlanBinding(ctx, plan.ID); err != nil {
		return nil, err
	}
	files, err := x.dp.PlanFiles(ctx, plan.ID)
	if err != nil {
		return nil, err
	}
	results, err := x.dp.DeleteResults(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	r := &run{x: x, job: job, plan: plan, files: files, roots: map[int64]*os.Root{}, done: map[int64]bool{},
		size: map[int64]int64{}, made: map[int64]map[string]bool{}, counts: map[string]int64{}}
	for _, f := range files {
		r.size[f.FileID] = f.SizeBytes
	}
	for _, res := range results {
		r.done[res.FileID] = true
		r.count(res.Outcome, r.size[res.FileID])
	}
	for _, f := range files {
		if err := r.open(ctx, f.LibraryID); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
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

// gate is read again before every copy moves. It refuses a library that
// no longer allows what the plan does to its copies (controld checked when
// it authorized the plan, and an operator may have changed the library
// since), and a worker whose claim is no longer the job's lease: the
// intents' fence held when they were written, and a worker frozen since
// then must not move the copies that follow.
func (r *run) gate(ctx context.Context, libID int64) error {
	g, err := r.x.dp.ReadDeleteGate(ctx, r.job, libID)
	switch {
	case err != nil:
		return err
	case !g.Owned:
		return fmt.Errorf("%s: %w", r.job.Fence(), store.ErrLeaseLost)
	case !g.AllowDelete:
		return protocol.Errorf(protocol.CodeLibraryReadOnly, "library %d no longer allows deletion", libID)
	case r.plan.Action == protocol.ActionUnlink && !g.AllowUnlink:
		return protocol.Errorf(protocol.CodeUnlinkForbidden, "library %d no longer allows unlink", libID)
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

// record stores outcomes under the job's lease, and counts them. The
// outcomes of files that already moved are stored even while the job is
// being cancelled.
func (r *run) record(ctx context.Context, results ...model.DeleteResult) error {
	if len(results) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
	}
	if err := r.x.dp.RecordDeleteResults(ctx, r.job, results); err != nil {
		return err
	}
	for _, res := range results {
		r.done[res.FileID] = true
		r.count(res.Outcome, r.size[res.FileID])
	}
	return nil
}

// result is the outcome of one planned file.
func result(f model.PlanFile, o protocol.DeleteOutcome, msg, trashRel string) model.DeleteResult {
	res := model.DeleteResult{FileID: f.FileID, Outcome: o, Message: msg}
	if trashRel != "" {
		res.TrashPath = &trashRel
	}
	return res
}

// isStop reports errors that end the job rather than one file's outcome.
func isStop(err error) bool { return errors.Is(err, store.ErrNotOwner) || store.IsUnavailable(err) }
