package trash

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

type env struct {
	t       testing.TB
	ctx     context.Context
	control *store.Store
	worker  *store.Store
	lib     string
	x       *Executor
	ids     map[string]int64
}

var t0 = time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)

// setup makes a library that allows deletion, with the given files (path
// → content), registered and hashed as a scan and a hash job would leave
// them.
func setup(t testing.TB, files map[string]string) *env {
	t.Helper()
	db := storetest.MustOpenClockedDB(t)
	root := t.TempDir()
	e := &env{t: t, ctx: context.Background(), control: db.Control, worker: db.Worker, lib: filepath.Join(root, "comics"), ids: map[string]int64{}}
	e.must(os.Mkdir(e.lib, 0o755))
	testfactory.Library(t, e.control, &testfactory.LibraryOpts{ID: 1, Name: "comics", Path: e.lib, AllowDelete: true})
	// In name order, so that a.cbz is the oldest: the tests' keep-oldest
	// outcomes depend on it (map order made TestUnlink flaky).
	for i, rel := range slices.Sorted(maps.Keys(files)) {
		e.write(rel, files[rel], t0.Add(time.Duration(i+1)*time.Hour))
		e.register(rel)
	}
	e.x = New(db.Worker, Config{LibraryRoots: pathsafe.Roots{root}})
	return e
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	_, err := storetest.Exec(e.ctx, e.control, q, args...)
	e.must(err)
}

func (e *env) write(rel, content string, mtime time.Time) {
	p := filepath.Join(e.lib, rel)
	e.must(os.MkdirAll(filepath.Dir(p), 0o755))
	e.must(os.WriteFile(p, []byte(content), 0o644))
	e.must(os.Chtimes(p, mtime, mtime))
}

func (e *env) register(rel string) {
	e.t.Helper()
	p := filepath.Join(e.lib, rel)
	fi, err := os.Stat(p)
	e.must(err)
	sum, err := hashing.File(e.ctx, p, protocol.HashBLAKE3)
	e.must(err)
	id, err := storetest.InsertID(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, needs_hash,
		hash_algorithm, content_hash, hashed_size_bytes, hashed_mtime_ns, created_at, updated_at)
		VALUES (1, ?, ?, ?, 0, 'blake3', ?, ?, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`,
		rel, fi.Size(), fi.ModTime().UnixNano(), sum, fi.Size(), fi.ModTime().UnixNano())
	e.must(err)
	e.ids[rel] = id
}

// plan plans every group with policy and authorizes it.
func (e *env) plan(p dedup.Policy, action protocol.DeleteAction) model.Job {
	e.t.Helper()
	plan := e.newPlan(p, action)
	job, created, err := duplicates.New(e.control).AuthorizePlan(e.ctx, plan.ID)
	e.must(err)
	if !created {
		e.t.Fatal("a new plan's job was not created")
	}
	return job
}

type nopReporter struct{}

func (nopReporter) Progress(int64, int64) {}

// run runs a job as the engine does: claimed, executed, then ended.
func (e *env) run(job model.Job) (map[string]int64, error) {
	job = e.claim(job)
	res, err := e.x.Execute(e.ctx, job, nopReporter{})
	o := leases.JobOutcome{Status: protocol.JobCompleted}
	if err != nil {
		o = leases.JobOutcome{Status: protocol.JobFailed, ErrorCode: "test", ErrorMessage: err.Error()}
	}
	if ferr := leases.New(e.worker).FinishJob(e.ctx, job.Fence(), o); ferr != nil && !errors.Is(ferr, store.ErrNotOwner) {
		e.t.Fatal(ferr) // a forged job has no row to finish
	}
	return res, err
}

// testWorker is the worker that claims the tests' jobs.
const testWorker = "trash-test"

// claim puts job in the state a worker's claim leaves it in (running,
// owned by testWorker), unless it is already running, and returns it as
// the worker sees it: every write of the executor is fenced by it.
func (e *env) claim(job model.Job) model.Job {
	e.t.Helper()
	e.exec(`UPDATE jobs SET status = 'running', worker_id = ?, lease_expires_at = '2999-01-01 00:00:00.000',
		lease_epoch = lease_epoch + 1, started_at = COALESCE(started_at, created_at) WHERE id = ? AND status <> 'running'`, testWorker, job.ID)
	return e.claimed(job, testWorker)
}

// claimed is job as the worker that claimed it sees it: its fence.
func (e *env) claimed(job model.Job, worker string) model.Job {
	e.t.Helper()
	epoch, err := storetest.QueryInt(e.ctx, e.control, `SELECT coalesce((SELECT lease_epoch FROM jobs WHERE id = ?), 0)`, job.ID)
	e.must(err)
	job.Status = protocol.JobRunning
	job.WorkerID = &worker
	job.LeaseEpoch = epoch
	return job
}

// outcomes is file → outcome of a job.
func (e *env) outcomes(job model.Job) map[string]protocol.DeleteOutcome {
	e.t.Helper()
	res, err := duplicates.New(e.control).DeleteResults(e.ctx, job.ID)
	e.must(err)
	out := map[string]protocol.DeleteOutcome{}
	for _, r := range res {
		for rel, id := range e.ids {
			if id == r.FileID {
				out[rel] = r.Outcome
			}
		}
	}
	return out
}

func (e *env) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(e.lib, rel))
	return err == nil
}

func TestTrashCopies(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a/Saga 01.cbz": "same", "b/Saga 01.cbz": "same", "c/Saga 01 (1).cbz": "same", "other.cbz": "unique"})
	job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	res, err := e.run(job)
	if err != nil {
		t.Fatal(err)
	}
	got := e.outcomes(job)
	keeper := ""
	for _, rel := range []string{"a/Saga 01.cbz", "b/Saga 01.cbz", "c/Saga 01 (1).cbz"} {
		if _, ok := got[rel]; !ok {
			keeper = rel
		}
	}
	if keeper == "" || len(got) != 2 || res["trashed"] != 2 || res["bytes_freed"] != 8 || !e.exists(keeper) || !e.exists("other.cbz") {
		t.Fatalf("outcomes %v, result %v, keeper %q", got, res, keeper)
	}
	for rel, o := range got {
		trash := filepath.Join(e.lib, protocol.TrashDir, strconv.FormatInt(job.ID, 10), rel)
		if data, err := os.ReadFile(trash); o != protocol.OutcomeTrashed || err != nil || string(data) != "same" || e.exists(rel) {
			t.Errorf("%s: %s, trash copy %q %v", rel, o, data, err)
		}
		if missing, err := storetest.QueryInt(e.ctx, e.control, `SELECT is_missing FROM library_files WHERE id = ?`, e.ids[rel]); err != nil || missing != 1 {
			t.Errorf("%s: row not marked missing", rel)
		}
	}
	t.Run("a second run changes nothing", func(t *testing.T) {
		again, err := e.run(job)
		if err != nil || again["trashed"] != 2 || !e.exists(keeper) {
			t.Fatalf("rerun %v %v", again, err)
		}
	})
	t.Run("executing twice answers with the same job", func(t *testing.T) {
		planID, err := storetest.QueryInt(e.ctx, e.control, `SELECT id FROM delete_plans WHERE job_id = ?`, job.ID)
		e.must(err)
		j, created, err := duplicates.New(e.control).AuthorizePlan(e.ctx, planID)
		if err != nil || created || j.ID != job.ID {
			t.Fatalf("second authorize: job %d created %v %v", j.ID, created, err)
		}
	})
}

func TestCopiesThatStay(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"keep.cbz": "twin", "changed.cbz": "twin", "gone.cbz": "twin", "link.cbz": "twin", "hard.cbz": "twin"})
	// The plan sees five copies; then the disk changes under it.
	job := e.plan(dedup.Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{e.groupKey("keep.cbz"): e.ids["keep.cbz"]}}, protocol.ActionTrash)
	fi, err := os.Stat(filepath.Join(e.lib, "changed.cbz"))
	e.must(err)
	e.write("changed.cbz", "TWIN", fi.ModTime()) // same size and mtime, other content
	e.must(os.Remove(filepath.Join(e.lib, "gone.cbz")))
	link := filepath.Join(e.lib, "link.cbz")
	fi, err = os.Stat(link)
	e.must(err)
	e.must(os.Remove(link))
	e.must(os.Symlink(filepath.Join(e.lib, "keep.cbz"), link))
	hard := filepath.Join(e.lib, "hard.cbz")
	e.must(os.Remove(hard))
	e.must(os.Link(filepath.Join(e.lib, "keep.cbz"), hard))
	if _, err := e.run(job); err != nil {
		t.Fatal(err)
	}
	want := map[string]protocol.DeleteOutcome{"changed.cbz": protocol.OutcomeChanged, "gone.cbz": protocol.OutcomeMissing,
		"link.cbz": protocol.OutcomePathViolation, "hard.cbz": protocol.OutcomeChanged}
	got := e.outcomes(job)
	for rel, o := range want {
		if got[rel] != o {
			t.Errorf("%s: %q, want %q", rel, got[rel], o)
		}
	}
	for _, rel := range []string{"keep.cbz", "changed.cbz", "link.cbz", "hard.cbz"} {
		if !e.exists(rel) {
			t.Errorf("%s was removed", rel)
		}
	}
}

func (e *env) groupKey(rel string) string {
	e.t.Helper()
	sum, err := hashing.File(e.ctx, filepath.Join(e.lib, rel), protocol.HashBLAKE3)
	e.must(err)
	return "blake3:" + hex.EncodeToString(sum)
}

func TestKeeperGuards(t *testing.T) {
	t.Parallel()
	t.Run("a changed keeper keeps every copy", func(t *testing.T) {
		e := setup(t, map[string]string{"keep.cbz": "data", "copy1.cbz": "data", "copy2.cbz": "data"})
		job := e.plan(dedup.Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{e.groupKey("keep.cbz"): e.ids["keep.cbz"]}}, protocol.ActionTrash)
		e.write("keep.cbz", "edited", t0)
		if _, err := e.run(job); err != nil {
			t.Fatal(err)
		}
		got := e.outcomes(job)
		if got["copy1.cbz"] != protocol.OutcomeLastCopy || got["copy2.cbz"] != protocol.OutcomeLastCopy || !e.exists("copy1.cbz") || !e.exists("copy2.cbz") {
			t.Fatalf("outcomes %v", got)
		}
	})
	t.Run("a keeper that is the copy itself", func(t *testing.T) {
		e := setup(t, map[string]string{"keep.cbz": "data", "copy.cbz": "data"})
		job := e.plan(dedup.Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{e.groupKey("keep.cbz"): e.ids["keep.cbz"]}}, protocol.ActionTrash)
		fi, err := os.Stat(filepath.Join(e.lib, "keep.cbz"))
		e.must(err)
		e.must(os.Remove(filepath.Join(e.lib, "copy.cbz")))
		e.must(os.Link(filepath.Join(e.lib, "keep.cbz"), filepath.Join(e.lib, "copy.cbz")))
		e.must(os.Chtimes(filepath.Join(e.lib, "copy.cbz"), fi.ModTime(), fi.ModTime()))
		e.exec(`UPDATE delete_plan_files SET mtime_ns = ? WHERE file_id = ?`, fi.ModTime().UnixNano(), e.ids["copy.cbz"])
		if _, err := e.run(job); err != nil {
			t.Fatal(err)
		}
		if got := e.outcomes(job); got["copy.cbz"] != protocol.OutcomeLastCopy || !e.exists("keep.cbz") {
			t.Fatalf("a hard link of the keeper: %v", got)
		}
	})
}

func TestUnauthorizedJobs(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "x", "b.cbz": "x"})
	job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	forged := job
	forged.ID = job.ID + 100
	if _, err := e.run(forged); protocol.CodeOf(err, "") != protocol.ErrInvalidPayload {
		t.Fatalf("a job the plan does not name: %v", err)
	}
	bad := job
	bad.Payload = `{"plan_id": "1"}`
	if _, err := e.run(bad); protocol.CodeOf(err, "") != protocol.ErrInvalidPayload {
		t.Fatalf("a bad payload: %v", err)
	}
	e.exec(`UPDATE libraries SET allow_delete = 0`)
	if _, err := e.run(job); protocol.CodeOf(err, "") != protocol.CodeLibraryReadOnly {
		t.Fatalf("a library that no longer allows deletion: %v", err)
	}
	if !e.exists("a.cbz") || !e.exists("b.cbz") {
		t.Fatal("a refused job removed a file")
	}
}

func TestUnlink(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "x", "b.cbz": "x"})
	groups, err := duplicates.New(e.control).PlanGroups(e.ctx, duplicates.PlanSelection{})
	e.must(err)
	planned, err := dedup.Decide(groups, dedup.Policy{Name: protocol.KeepOldest})
	e.must(err)
	plan, err := duplicates.New(e.control).CreatePlan(e.ctx, duplicates.NewPlan{Policy: protocol.KeepOldest, Action: protocol.ActionUnlink, Groups: planned, TTL: time.Hour})
	e.must(err)
	if _, _, err := duplicates.New(e.control).AuthorizePlan(e.ctx, plan.ID); protocol.CodeOf(err, "") != protocol.CodeUnlinkForbidden {
		t.Fatalf("unlink without allow_unlink: %v", err)
	}
	e.exec(`UPDATE libraries SET allow_unlink = 1`)
	job, _, err := duplicates.New(e.control).AuthorizePlan(e.ctx, plan.ID)
	e.must(err)
	if _, err := e.run(job); err != nil {
		t.Fatal(err)
	}
	if got := e.outcomes(job); got["b.cbz"] != protocol.OutcomeUnlinked || e.exists("b.cbz") || !e.exists("a.cbz") ||
		e.exists(protocol.TrashDir) {
		t.Fatalf("unlink: %v", got)
	}
}

// TestResume: a job cancelled mid-plan, then one killed between a rename
// and its record (the copy already in the trash), both finish on retry
// with every copy in exactly one place.
func TestResume(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "x", "b.cbz": "x", "c.cbz": "x", "d.cbz": "x"})
	job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	removes, err := duplicates.New(e.control).PlanFiles(e.ctx, mustPlanID(e, job))
	e.must(err)
	var copies []string
	for _, f := range removes {
		if f.Decision == protocol.DecisionRemove {
			copies = append(copies, f.RelativePath)
		}
	}
	// Killed after the rename of the last copy, before its record.
	trash := filepath.Join(e.lib, protocol.TrashDir, strconv.FormatInt(job.ID, 10))
	e.must(os.MkdirAll(trash, 0o755))
	e.must(os.Rename(filepath.Join(e.lib, copies[2]), filepath.Join(trash, copies[2])))
	// Cancelled after the first removal.
	ctx, cancel := context.WithCancel(context.Background())
	e.x.beforeRemove = func(string) { cancel() }
	if _, err := e.x.Execute(ctx, e.claim(job), nopReporter{}); err == nil {
		t.Fatal("a cancelled job returned no error")
	}
	// The copy in hand finished, and the one found in the trash was
	// recorded with it; the third waits for the retry.
	if got := e.outcomes(job); len(got) != 2 || got[copies[1]] != "" {
		t.Fatalf("after the cancel: %v", got)
	}
	e.x.beforeRemove = nil
	res, err := e.run(job)
	if err != nil || res["trashed"] != 3 {
		t.Fatalf("resumed run %v %v", res, err)
	}
	n := 0
	e.must(filepath.WalkDir(trash, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); !bytes.Equal(data, []byte("x")) {
				t.Errorf("%s holds %q", p, data)
			}
			n++
		}
		return err
	}))
	for _, rel := range copies {
		if e.exists(rel) {
			t.Errorf("%s is both in place and in the trash", rel)
		}
	}
	if n != 3 {
		t.Fatalf("%d files in the trash, want 3", n)
	}
}

func mustPlanID(e *env, job model.Job) int64 {
	e.t.Helper()
	id, err := storetest.QueryInt(e.ctx, e.control, `SELECT id FROM delete_plans WHERE job_id = ?`, job.ID)
	e.must(err)
	return id
}

// TestWorkerCannotAuthorize: workerd's connections may record outcomes
// but never write a plan: the authorization is controld's alone.
func TestWorkerCannotAuthorize(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "x", "b.cbz": "x"})
	e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	for _, q := range []string{
		`UPDATE delete_plans SET job_id = 99`,
		`UPDATE delete_plans SET action = 'unlink'`,
		`INSERT INTO delete_plans (policy, group_count, remove_count, bytes_freed, created_at, expires_at) VALUES ('oldest', 0, 0, 0, '2026-01-01 00:00:00.000', '2030-01-01 00:00:00.000')`,
		`DELETE FROM delete_plans`,
		`UPDATE delete_plan_files SET decision = 'remove'`,
		`INSERT INTO delete_plan_files SELECT * FROM delete_plan_files`,
		`DELETE FROM delete_plan_files`,
		`UPDATE libraries SET allow_delete = 1`,
		`UPDATE libraries SET allow_unlink = 1`,
		`DELETE FROM delete_claims`,
		`UPDATE delete_claims SET job_id = 99`,
		`INSERT INTO delete_claims (file_id, plan_id, job_id) VALUES (999, 1, 1)`,
	} {
		if _, err := storetest.Exec(e.ctx, e.worker, q); err == nil || !store.IsAuthDenied(err) {
			t.Errorf("workerd ran %q: %v", strings.Fields(q)[0]+" "+strings.Fields(q)[1], err)
		}
	}
}

// TestReadOnlyLibrary: on a library mounted read-only, the first copy is
// recorded read_only_filesystem, the job fails with that code, and nothing
// is half-moved.
func TestReadOnlyLibrary(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "a read-only bind mount needs root")
		return
	}
	e := setup(t, map[string]string{"a.cbz": "x", "b.cbz": "x", "c.cbz": "x"})
	job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
	if out, err := exec.Command("mount", "--bind", "-o", "ro", e.lib, e.lib).CombinedOutput(); err != nil {
		testutil.SkipUnlessCI(t, "cannot mount read-only here: %v %s", err, out)
		return
	}
	t.Cleanup(func() { _ = exec.Command("umount", e.lib).Run() })
	_, err := e.run(job)
	if protocol.CodeOf(err, "") != protocol.ErrReadOnlyFS {
		t.Fatalf("job error %v, want read_only_filesystem", err)
	}
	got := e.outcomes(job)
	if len(got) != 1 {
		t.Fatalf("outcomes %v: want the first copy only", got)
	}
	for _, o := range got {
		if o != protocol.OutcomeReadOnly {
			t.Fatalf("outcome %q", o)
		}
	}
	for _, rel := range []string{"a.cbz", "b.cbz", "c.cbz"} {
		if !e.exists(rel) {
			t.Errorf("%s moved on a read-only library", rel)
		}
	}
}

func TestRestore(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "x", "b/b.cbz": "x", "c/c.cbz": "x"})
	del := e.plan(dedup.Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{e.groupKey("a.cbz"): e.ids["a.cbz"]}}, protocol.ActionTrash)
	if _, err := e.run(del); err != nil {
		t.Fatal(err)
	}
	t.Run("a file its job did not trash", func(t *testing.T) {
		if _, err := duplicates.New(e.control).CreateRestore(e.ctx, del.ID, []int64{e.ids["a.cbz"]}); protocol.CodeOf(err, "") != protocol.CodeNotInTrash {
			t.Fatalf("restoring the keeper: %v", err)
		}
		if _, err := duplicates.New(e.control).CreateRestore(e.ctx, 999, nil); protocol.CodeOf(err, "") != protocol.CodeJobNotFound {
			t.Fatalf("restoring an unknown job: %v", err)
		}
	})
	// b's path is taken again by the time of the restore: it stays in the trash.
	e.write("b/b.cbz", "new", t0)
	job, err := duplicates.New(e.control).CreateRestore(e.ctx, del.ID, nil)
	e.must(err)
	if _, err := e.run(job); err != nil {
		t.Fatal(err)
	}
	got := e.outcomes(job)
	if got["c/c.cbz"] != protocol.OutcomeRestored || got["b/b.cbz"] != protocol.OutcomeRestoreConflict {
		t.Fatalf("restore outcomes %v", got)
	}
	if data, err := os.ReadFile(filepath.Join(e.lib, "b/b.cbz")); err != nil || string(data) != "new" {
		t.Fatalf("the file that took b's path: %q %v", data, err)
	}
	trashB := filepath.Join(e.lib, protocol.TrashDir, strconv.FormatInt(del.ID, 10), "b/b.cbz")
	if data, err := os.ReadFile(trashB); err != nil || string(data) != "x" {
		t.Fatalf("b's trash copy: %q %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(e.lib, "c/c.cbz")); err != nil || string(data) != "x" {
		t.Fatalf("c restored: %q %v", data, err)
	}
	if missing, err := storetest.QueryInt(e.ctx, e.control, `SELECT is_missing FROM library_files WHERE id = ?`, e.ids["c/c.cbz"]); err != nil || missing != 0 {
		t.Fatalf("c's row after its restore: missing=%d %v", missing, err)
	}
	t.Run("once b's path is free again", func(t *testing.T) {
		e.must(os.Remove(filepath.Join(e.lib, "b/b.cbz")))
		job, err := duplicates.New(e.control).CreateRestore(e.ctx, del.ID, []int64{e.ids["b/b.cbz"]})
		e.must(err)
		if _, err := e.run(job); err != nil {
			t.Fatal(err)
		}
		if got := e.outcomes(job); got["b/b.cbz"] != protocol.OutcomeRestored || !e.exists("b/b.cbz") {
			t.Fatalf("outcomes %v", got)
		}
		if _, err := os.Stat(trashB); !os.IsNotExist(err) {
			t.Fatalf("the trash copy is still there: %v", err)
		}
	})
}

func TestPurge(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "x", "b/b.cbz": "x", "c/d/c.cbz": "x", "e/e.cbz": "x"})
	del := e.plan(dedup.Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{e.groupKey("a.cbz"): e.ids["a.cbz"]}}, protocol.ActionTrash)
	if _, err := e.run(del); err != nil {
		t.Fatal(err)
	}
	finish := func(job model.Job) {
		e.exec(`UPDATE jobs SET status = 'completed', finished_at = '2026-01-01 00:00:00.000' WHERE id = ?`, job.ID)
	}
	finish(del)
	restore, err := duplicates.New(e.control).CreateRestore(e.ctx, del.ID, []int64{e.ids["b/b.cbz"]})
	e.must(err)
	if _, err := e.run(restore); err != nil {
		t.Fatal(err)
	}
	// Someone rewrote a trash copy since: it is not the trashed file.
	trash := filepath.Join(e.lib, protocol.TrashDir, strconv.FormatInt(del.ID, 10))
	e.write(filepath.Join(protocol.TrashDir, strconv.FormatInt(del.ID, 10), "e/e.cbz"), "other", t0)

	if n, err := duplicates.New(e.control).SchedulePurges(e.ctx, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 10); err != nil || n != 0 {
		t.Fatalf("a purge scheduled before the trash is old enough: %d %v", n, err)
	}
	n, err := duplicates.New(e.control).SchedulePurges(e.ctx, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 10)
	if err != nil || n != 1 {
		t.Fatalf("scheduled %d purges: %v", n, err)
	}
	if n, err := duplicates.New(e.control).SchedulePurges(e.ctx, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 10); err != nil || n != 0 {
		t.Fatalf("the same trash purged twice: %d %v", n, err)
	}
	purge := e.runPurge()
	got := e.outcomes(purge)
	if len(got) != 2 || got["c/d/c.cbz"] != protocol.OutcomePurged || got["e/e.cbz"] != protocol.OutcomeChanged {
		t.Fatalf("purge outcomes %v: the restored b is not purged, c is, e stays", got)
	}
	if _, err := os.Stat(filepath.Join(trash, "c")); !os.IsNotExist(err) {
		t.Errorf("c's emptied trash folders remain: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(trash, "e/e.cbz")); err != nil || string(data) != "other" {
		t.Errorf("a file that is not the trashed one was purged: %v", err)
	}
	if !e.exists("b/b.cbz") || !e.exists("a.cbz") {
		t.Error("a restored file or the keeper was purged")
	}
	fates, err := duplicates.New(e.control).TrashFates(e.ctx, del.ID)
	e.must(err)
	if len(fates) != 2 || fates[e.ids["b/b.cbz"]] != protocol.OutcomeRestored || fates[e.ids["c/d/c.cbz"]] != protocol.OutcomePurged {
		t.Errorf("trash fates %v", fates)
	}
}

// TestCancelRecordsNothing: a copy whose check a cancel cut short gets no
// outcome, so the retry checks it again instead of skipping it.
func TestCancelRecordsNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, map[string]string{"a.cbz": "x", "b.cbz": "x"})
	job := e.claim(e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash))
	r, err := e.x.start(e.ctx, job)
	e.must(err)
	defer r.close()
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := r.removals(ctx, func(int) {}); err == nil {
		t.Fatal("a plan run under a cancelled context returned no error")
	}
	if got := e.outcomes(job); len(got) != 0 {
		t.Fatalf("outcomes recorded for a cut-short check: %v", got)
	}
	if !e.exists("a.cbz") || !e.exists("b.cbz") {
		t.Fatal("a file moved under a cancelled context")
	}
}
