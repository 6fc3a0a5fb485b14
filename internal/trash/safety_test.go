package trash

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

// The tests of issue 34: one per way the delete job lost the last copy of
// a book, each failing before the change that closed it.

// newPlan plans every group with policy, without authorizing it.
func (e *env) newPlan(p dedup.Policy, action protocol.DeleteAction) model.Plan {
	e.t.Helper()
	groups, err := duplicates.New(e.control).PlanGroups(e.ctx, duplicates.PlanSelection{})
	e.must(err)
	planned, err := dedup.Decide(groups, p)
	e.must(err)
	plan, err := duplicates.New(e.control).CreatePlan(e.ctx, duplicates.NewPlan{Policy: p.Name, Action: action, Groups: planned, TTL: time.Hour})
	e.must(err)
	return plan
}

func (e *env) keep(rel string) dedup.Policy {
	return dedup.Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{e.groupKey(rel): e.ids[rel]}}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.lib, rel))
	e.must(err)
	return string(b)
}

// inTrash lists the regular files under the library's trash.
func (e *env) inTrash() []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(e.lib, protocol.TrashDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// rewrite changes rel's bytes in place (same inode), keeping its size and
// mtime: only its ctime and content tell.
func (e *env) rewrite(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.lib, rel)
	fi, err := os.Stat(p)
	e.must(err)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	e.must(err)
	_, err = f.WriteAt([]byte(content), 0)
	e.must(err)
	e.must(f.Close())
	e.must(os.Chtimes(p, fi.ModTime(), fi.ModTime()))
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if protocol.CodeOf(err, "") != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// Hole 1: two plans with swapped keepers. The second is refused while the
// first runs; once it ended, the second finds its keeper gone and keeps
// its copy.
func TestSwappedKeepers(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"X/a.cbz": "book", "Y/b.cbz": "book"})
	p1 := e.newPlan(e.keep("X/a.cbz"), protocol.ActionTrash)
	p2 := e.newPlan(e.keep("Y/b.cbz"), protocol.ActionTrash)
	j1, _, err := duplicates.New(e.control).AuthorizePlan(e.ctx, p1.ID)
	e.must(err)
	_, _, err = duplicates.New(e.control).AuthorizePlan(e.ctx, p2.ID)
	wantCode(t, err, protocol.CodeFilesBusy)
	if !strings.Contains(err.Error(), "plan "+strconv.FormatInt(p1.ID, 10)) {
		t.Fatalf("files_busy does not name the plan holding the files: %v", err)
	}
	if p, _ := duplicates.New(e.control).GetPlan(e.ctx, p2.ID); p.JobID != nil {
		t.Fatal("the refused plan got a job")
	}
	if _, err := e.run(j1); err != nil {
		t.Fatal(err)
	}
	j2, _, err := duplicates.New(e.control).AuthorizePlan(e.ctx, p2.ID)
	e.must(err)
	if _, err := e.run(j2); err != nil {
		t.Fatal(err)
	}
	if got := e.outcomes(j2); got["X/a.cbz"] != protocol.OutcomeLastCopy || e.read("X/a.cbz") != "book" {
		t.Fatalf("the second plan's outcomes %v: the last copy must stay", got)
	}
}

// Two authorizations racing on the same files: exactly one gets the job
// (the claim's primary key decides, on PostgreSQL as on SQLite); a cancel
// releases the files.
func TestClaimRace(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
	for i := range 8 {
		plans := []model.Plan{e.newPlan(e.keep("a.cbz"), protocol.ActionTrash), e.newPlan(e.keep("b.cbz"), protocol.ActionTrash)}
		var wg sync.WaitGroup
		jobs := make([]model.Job, 2)
		errs := make([]error, 2)
		for k, p := range plans {
			wg.Go(func() { jobs[k], _, errs[k] = duplicates.New(e.control).AuthorizePlan(e.ctx, p.ID) })
		}
		wg.Wait()
		won := -1
		for k, err := range errs {
			switch {
			case err == nil && won < 0:
				won = k
			case err == nil:
				t.Fatalf("round %d: both plans were authorized", i)
			case protocol.CodeOf(err, "") != protocol.CodeFilesBusy:
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither plan was authorized: %v", i, errs)
		}
		_, err := queue.New(e.control).CancelJob(e.ctx, jobs[won].ID)
		e.must(err)
	}
}

// Hole 2: the copy's path is taken by a user's new file after the copy was
// checked. The new file stays where the user put it, in trash and unlink
// mode alike.
func TestCopyReplacedAfterCheck(t *testing.T) {
	t.Parallel()
	for _, action := range []protocol.DeleteAction{protocol.ActionTrash, protocol.ActionUnlink} {
		t.Run(string(action), func(t *testing.T) {
			e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
			e.exec(`UPDATE libraries SET allow_unlink = 1`)
			job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, action)
			e.x.beforeRemove = func(rel string) {
				fi, err := os.Stat(filepath.Join(e.lib, rel))
				e.must(err)
				e.write("new.tmp", "user", fi.ModTime()) // same size and mtime as the copy
				e.must(os.Rename(filepath.Join(e.lib, "new.tmp"), filepath.Join(e.lib, rel)))
			}
			res, err := e.run(job)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.outcomes(job); got["b.cbz"] != protocol.OutcomeChanged || e.read("b.cbz") != "user" || res["bytes_freed"] != 0 {
				t.Fatalf("outcomes %v, result %v, b.cbz holds %q", got, res, e.read("b.cbz"))
			}
			if left := e.inTrash(); len(left) != 0 {
				t.Fatalf("moved to the trash: %v", left)
			}
		})
	}
}

// Hole 3: the keeper is edited in place (size and mtime kept) while the
// group's copies are processed, or after they are all staged: no copy
// leaves, in trash and unlink mode alike.
func TestKeeperEditedMidGroup(t *testing.T) {
	t.Parallel()
	for _, action := range []protocol.DeleteAction{protocol.ActionTrash, protocol.ActionUnlink} {
		for _, when := range []string{"before the second copy", "after the copies are staged"} {
			t.Run(string(action)+"/"+when, func(t *testing.T) {
				e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same", "c.cbz": "same"})
				e.exec(`UPDATE libraries SET allow_unlink = 1`)
				job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, action)
				edit := func() { e.rewrite("a.cbz", "edit") }
				if when == "before the second copy" {
					e.x.beforeRemove = func(rel string) {
						if rel == "c.cbz" {
							edit()
						}
					}
				} else {
					e.x.beforeSettle = edit
				}
				res, err := e.run(job)
				if err != nil {
					t.Fatal(err)
				}
				got := e.outcomes(job)
				if got["b.cbz"] != protocol.OutcomeLastCopy || got["c.cbz"] != protocol.OutcomeLastCopy || res["bytes_freed"] != 0 {
					t.Fatalf("outcomes %v, result %v", got, res)
				}
				if e.read("b.cbz") != "same" || e.read("c.cbz") != "same" || len(e.inTrash()) != 0 {
					t.Fatalf("the planned content left the library: b %q, c %q, trash %v", e.read("b.cbz"), e.read("c.cbz"), e.inTrash())
				}
			})
		}
	}
}

// Hole 4: allow_delete turned off while the job runs stops it before the
// next copy.
func TestAllowDeleteRevokedMidJob(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a1.cbz": "x", "a2.cbz": "x", "b1.cbz": "y", "b2.cbz": "y"})
	job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	calls := 0
	e.x.beforeRemove = func(string) {
		if calls++; calls == 2 {
			e.exec(`UPDATE libraries SET allow_delete = 0`)
		}
	}
	_, err := e.run(job)
	wantCode(t, err, protocol.CodeLibraryReadOnly)
	got := e.outcomes(job)
	if len(got) != 1 || len(e.inTrash()) != 1 || e.exists("a2.cbz") == e.exists("b2.cbz") {
		t.Fatalf("outcomes %v: the copy in hand finishes, the next one stays", got)
	}
	for rel, o := range got {
		if o != protocol.OutcomeTrashed || e.exists(rel) {
			t.Fatalf("outcomes %v", got)
		}
	}
}

// Hole 5: a move never replaces, and never follows a symlink it moves.
func TestRenameNoReplace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"a": "trash copy", "b": "user's new file"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := renameNoReplace(root, "a", "b"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a move onto an existing file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b")); string(b) != "user's new file" {
		t.Fatalf("b was replaced: %q", b)
	}
	if err := renameNoReplace(root, "link", "moved"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "moved")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the symlink was followed: %v %v", fi, err)
	}
	if err := renameNoReplace(root, "a", "../outside"); err == nil {
		t.Fatal("a move left the root")
	}
}

// killedAfterMove leaves what a worker killed between moving rel into the
// job's trash and recording it leaves: the intent and the move.
func (e *env) killedAfterMove(job model.Job, rel string) {
	e.t.Helper()
	trashRel := filepath.Join(protocol.TrashDir, strconv.FormatInt(job.ID, 10), rel)
	e.must(duplicates.New(e.worker).RecordDeleteIntents(e.ctx, job, []duplicates.DeleteIntent{{FileID: e.ids[rel], TrashPath: trashRel}}))
	e.must(os.MkdirAll(filepath.Dir(filepath.Join(e.lib, trashRel)), 0o755))
	e.must(os.Rename(filepath.Join(e.lib, rel), filepath.Join(e.lib, trashRel)))
}

// runPurge runs the purge job SchedulePurges made, and returns it.
func (e *env) runPurge() model.Job {
	e.t.Helper()
	id, err := storetest.QueryInt(e.ctx, e.control, `SELECT job_id FROM delete_plans WHERE action = 'purge'`)
	e.must(err)
	purge, err := queue.New(e.control).GetJob(e.ctx, id)
	e.must(err)
	if _, err := e.run(purge); err != nil {
		e.t.Fatal(err)
	}
	return purge
}

// Hole 6: killed between the move and its outcome, then cancelled. The
// cancel does not end the job until a worker settled the intent: the copy
// is recorded trashed and restores byte-identical.
func TestCrashThenCancel(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
	job := e.claim(e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash))
	e.killedAfterMove(job, "b.cbz")
	// kill -9; recovery hands the job back; the operator cancels it.
	e.exec(`UPDATE jobs SET status = 'retryable', worker_id = NULL, lease_expires_at = NULL WHERE id = ?`, job.ID)
	j, err := queue.New(e.control).CancelJob(e.ctx, job.ID)
	e.must(err)
	if j.Status.Terminal() || !j.CancelRequested {
		t.Fatalf("a delete job with unsettled intents was cancelled at once: %s", j.Status)
	}
	e.exec(`UPDATE jobs SET status = 'pending' WHERE id = ?`, job.ID) // the retry service's promotion
	claimed, err := leases.New(e.worker).ClaimJob(e.ctx, "w2", time.Minute, protocol.JobKindDelete)
	e.must(err)
	if claimed == nil || claimed.ID != job.ID || !claimed.CancelRequested {
		t.Fatalf("claimed %+v", claimed)
	}
	e.must(e.x.Reconcile(e.ctx, *claimed))
	e.must(leases.New(e.worker).FinishJob(e.ctx, claimed.Fence(), leases.JobOutcome{Status: protocol.JobCancelled, ErrorCode: protocol.ErrCancelled}))
	if got := e.outcomes(job); got["b.cbz"] != protocol.OutcomeTrashed {
		t.Fatalf("outcomes %v", got)
	}
	if left, err := duplicates.New(e.control).DeleteIntents(e.ctx, job.ID); err != nil || len(left) != 0 {
		t.Fatalf("intents left %v %v", left, err)
	}
	restore, err := duplicates.New(e.control).CreateRestore(e.ctx, job.ID, nil)
	e.must(err)
	if _, err := e.run(restore); err != nil {
		t.Fatal(err)
	}
	if e.read("b.cbz") != "same" || len(e.inTrash()) != 0 {
		t.Fatal("the cancelled job's copy did not come back")
	}
}

// Hole 7: killed between a restore's link and its unlink (the one file
// under both names): the retry finishes it, restored.
func TestRestoreCutBetweenLinkAndUnlink(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
	del := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	if _, err := e.run(del); err != nil {
		t.Fatal(err)
	}
	restore, err := duplicates.New(e.control).CreateRestore(e.ctx, del.ID, nil)
	e.must(err)
	trashed := filepath.Join(e.lib, protocol.TrashDir, strconv.FormatInt(del.ID, 10), "b.cbz")
	e.must(os.Link(trashed, filepath.Join(e.lib, "b.cbz")))
	if _, err := e.run(restore); err != nil {
		t.Fatal(err)
	}
	if got := e.outcomes(restore); got["b.cbz"] != protocol.OutcomeRestored || e.read("b.cbz") != "same" || len(e.inTrash()) != 0 {
		t.Fatalf("outcomes %v, trash %v", got, e.inTrash())
	}
}

// Hole 8: a plan outlives its library; the id now names another folder.
// controld refuses to authorize it, and workerd refuses a job authorized
// before the swap.
func TestPlanOutlivesLibrary(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
	before := e.newPlan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	authorized := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	e.must(e.control.DeleteLibrary(e.ctx, 1))
	other := filepath.Join(filepath.Dir(e.lib), "other")
	e.lib = other
	e.write("a.cbz", "same", t0)
	e.write("b.cbz", "same", t0)
	testfactory.Library(t, e.control, &testfactory.LibraryOpts{ID: 1, Name: "other", Path: other, AllowDelete: true,
		CreatedAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)})
	_, _, err := duplicates.New(e.control).AuthorizePlan(e.ctx, before.ID)
	wantCode(t, err, protocol.CodePlanInvalid)
	_, err = e.run(authorized)
	wantCode(t, err, protocol.CodePlanInvalid)
	if !e.exists("a.cbz") || !e.exists("b.cbz") || len(e.inTrash()) != 0 {
		t.Fatal("a file of the new library moved")
	}
}

// Hole 9: the purge removes a trash file only while its bytes are the
// trashed ones, whatever its size and mtime say.
func TestPurgeChecksDigest(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
	del := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	if _, err := e.run(del); err != nil {
		t.Fatal(err)
	}
	trashRel := filepath.Join(protocol.TrashDir, strconv.FormatInt(del.ID, 10), "b.cbz")
	e.rewrite(trashRel, "diff")
	if n, err := duplicates.New(e.control).SchedulePurges(e.ctx, time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), 10); err != nil || n != 1 {
		t.Fatalf("scheduled %d purges: %v", n, err)
	}
	purge := e.runPurge()
	if got := e.outcomes(purge); got["b.cbz"] != protocol.OutcomeChanged || e.read(trashRel) != "diff" {
		t.Fatalf("purge outcomes %v", got)
	}
}

// Fencing: a worker whose lease passed to another writes nothing more and
// moves nothing more; the new owner settles what it left.
func TestLostLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same", "c.cbz": "same"})
	job := e.claim(e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash))
	e.x.beforeRemove = func(rel string) {
		if rel == "c.cbz" { // b is staged: the lease is lost now
			e.exec(`UPDATE jobs SET worker_id = 'w2' WHERE id = ?`, job.ID)
		}
	}
	_, err := e.x.Execute(e.ctx, job, nopReporter{})
	if !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("a run past its lease: %v", err)
	}
	if got := e.outcomes(job); len(got) != 0 || !e.exists("c.cbz") {
		t.Fatalf("written or moved past the lease: %v", got)
	}
	e.x.beforeRemove = nil
	res, err := e.x.Execute(e.ctx, e.claimed(job, "w2"), nopReporter{})
	e.must(err)
	if got := e.outcomes(job); got["b.cbz"] != protocol.OutcomeTrashed || got["c.cbz"] != protocol.OutcomeTrashed || res["bytes_freed"] != 8 {
		t.Fatalf("the new owner's outcomes %v, result %v", got, res)
	}
}

// A cancel that lands with a keeper edit, after a group's copies were
// staged: the copies still go back to their paths (the cancel stops moves,
// never the settling of what moved).
func TestCancelWithKeeperEditAfterStaging(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "same", "b.cbz": "same"})
	job := e.claim(e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash))
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	e.x.beforeSettle = func() {
		cancel()
		e.rewrite("a.cbz", "edit")
	}
	_, _ = e.x.Execute(ctx, job, nopReporter{}) // the cancel came after the last move: the job may end either way
	if got := e.outcomes(job); got["b.cbz"] != protocol.OutcomeLastCopy || e.read("b.cbz") != "same" || len(e.inTrash()) != 0 {
		t.Fatalf("outcomes %v, trash %v", got, e.inTrash())
	}
}
