package trash

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// TestDeleteStateMachine is the delete state machine under random
// interleavings (issue 34): plans with random keepers over shared files,
// authorized when their files are free; jobs run by 1–3 workers; at the
// executor's steps a user edits, replaces, moves or removes a keeper or a
// copy, a cancel lands, or the worker freezes for good (kill -9 as far as
// the job can tell: its lease goes to another worker, which runs the job
// again); restores and purges. After every run:
//   - every content still lies outside the trash, unless the user changed
//     every file that held it;
//   - every file in the trash is recorded, by an outcome or an intent;
//   - every restored file holds the bytes it was planned with.
func TestDeleteStateMachine(t *testing.T) { stateMachine(t, protocol.PlanBytes, "", "30") }

// TestSamePagesStateMachine is the same state machine over same_pages
// plans (issue 38): each content is a book's pages, its copies zips of
// them written differently (stored or deflated, entries in another order,
// a ComicInfo.xml or not), so no two copies share their bytes; a content
// lies outside the trash while some file there still holds its pages.
func TestSamePagesStateMachine(t *testing.T) { stateMachine(t, protocol.PlanSamePages, "40", "15") }

// stateMachine runs the model over plans of kind. A case makes a database
// (and a same_pages case decompresses every book it checks): unless
// -rapid.checks says otherwise, it runs checks cases on SQLite ("": rapid's
// default) and pgChecks on PostgreSQL (make test-postgres runs beside the
// other suites).
func stateMachine(t *testing.T, kind protocol.PlanKind, checks, pgChecks string) {
	if storetest.Postgres() {
		checks = pgChecks
	}
	if checks != "" && !flagSet("rapid.checks") {
		defer flag.Set("rapid.checks", flag.Lookup("rapid.checks").Value.String())
		_ = flag.Set("rapid.checks", checks)
	}
	rapid.Check(t, func(rt *rapid.T) {
		scope := &scopeTB{TB: t}
		defer scope.end()
		m := newDeleteModel(scope, rt, kind)
		defer m.thaw()
		for step := range rapid.IntRange(1, 6).Draw(rt, "steps") {
			switch rapid.SampledFrom([]string{"delete", "delete", "delete", "restore", "purge", "edit"}).Draw(rt, "op") {
			case "delete":
				m.delete(rt)
			case "restore":
				m.restore(rt)
			case "purge":
				m.purge(rt)
			case "edit":
				m.userEdit(rapid.SampledFrom(m.paths).Draw(rt, "edited"))
				// A user who edits the last copy outside the trash loses
				// that content; no job did.
				outside, _ := m.scan()
				for _, c := range m.content {
					if !outside[c] {
						m.userLost[c] = true
					}
				}
			}
			m.check(rt, step)
		}
	})
}

type deleteModel struct {
	e       *env
	kind    protocol.PlanKind
	paths   []string          // every file the library started with
	content map[string]string // path → its planned content (bytes plans: its bytes; same_pages: its book)
	planned map[string]string // path → its planned bytes
	// books are, in a same_pages model, the book of each whole page list.
	books   map[string]string
	touched map[string]bool // paths the user changed, replaced, moved or removed
	// userLost are contents whose last copy outside the trash the user
	// changed after jobs had trashed the others.
	userLost map[string]bool
	workers  int
	frozen   []chan struct{}
	wg       sync.WaitGroup
	jobs     []model.Job // delete jobs with action trash or unlink, ended
}

func flagSet(name string) (set bool) {
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// scopeTB is t for one rapid case: what the case opened (its database and
// connections) is closed when the case ends, not when the test does.
type scopeTB struct {
	testing.TB
	cleanups []func()
}

func (s *scopeTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *scopeTB) end() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

func newDeleteModel(t testing.TB, rt *rapid.T, kind protocol.PlanKind) *deleteModel {
	files, content := map[string]string{}, map[string]string{}
	for c := range rapid.IntRange(1, 3).Draw(rt, "contents") {
		for i := range rapid.IntRange(2, 4).Draw(rt, "copies") {
			rel := fmt.Sprintf("d%d/c%d-%d.cbz", i%2, c, i)
			content[rel], files[rel] = fmt.Sprintf("content %d", c), fmt.Sprintf("content %d", c)
			if kind == protocol.PlanSamePages {
				files[rel] = repack(t, pageSet(uint64(c), 2), i)
			}
		}
	}
	m := &deleteModel{e: setup(t, files), kind: kind, content: content, planned: files, books: map[string]string{},
		touched: map[string]bool{}, userLost: map[string]bool{}}
	m.e.exec(`UPDATE libraries SET allow_unlink = 1`)
	if kind == protocol.PlanSamePages {
		for rel := range files {
			pages := m.e.readDigests(rel)
			m.e.storeDigests(rel, pages)
			m.books[pageListKey(pages)] = content[rel]
		}
	}
	m.paths = slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	})
	return m
}

// userEdit changes one file the way a user might, and remembers it.
func (m *deleteModel) userEdit(rel string) {
	p := filepath.Join(m.e.lib, rel)
	fi, err := os.Stat(p)
	if err != nil {
		return
	}
	m.touched[rel] = true
	switch len(m.touched) % 4 {
	case 0: // edited in place, size and mtime kept
		m.e.rewrite(rel, strings.Repeat("e", int(fi.Size())))
	case 1: // replaced by a new file of the same size and mtime
		m.e.write(rel+".new", strings.Repeat("r", int(fi.Size())), fi.ModTime())
		m.e.must(os.Rename(p+".new", p))
	case 2: // moved within the library
		m.e.must(os.Rename(p, p+".moved"))
	case 3:
		m.e.must(os.Remove(p))
	}
}

// delete plans random keepers over every group, and runs the plan if its
// files are free.
func (m *deleteModel) delete(rt *rapid.T) {
	e := m.e
	groups, err := duplicates.New(e.control).PlanGroups(e.ctx, duplicates.PlanSelection{Kind: m.kind, Rules: duplicates.SameBookRules{CommonMinSeries: 5}})
	if err != nil || len(groups) == 0 {
		return
	}
	keep := map[string]int64{}
	for _, g := range groups {
		keep[g.Name()] = rapid.SampledFrom(g.Members).Draw(rt, "keeper").FileID
	}
	planned, err := dedup.Decide(groups, dedup.Policy{Name: protocol.KeepExplicit, Keep: keep})
	e.must(err)
	if len(planned) == 0 {
		return
	}
	action := rapid.SampledFrom([]protocol.DeleteAction{protocol.ActionTrash, protocol.ActionUnlink}).Draw(rt, "action")
	plan, err := duplicates.New(e.control).CreatePlan(e.ctx, duplicates.NewPlan{Policy: protocol.KeepExplicit, Action: action, Kind: m.kind,
		Groups: planned, TTL: time.Hour})
	e.must(err)
	job, _, err := duplicates.New(e.control).AuthorizePlan(e.ctx, plan.ID)
	if protocol.CodeOf(err, "") == protocol.CodeFilesBusy {
		return
	}
	e.must(err)
	keepers := map[string]string{}
	for _, g := range planned {
		for _, c := range g.Remove {
			keepers[c.RelativePath] = g.Keep.RelativePath
		}
	}
	m.runWithFaults(rt, job, keepers)
	m.jobs = append(m.jobs, job)
}

// runWithFaults runs a delete job with one random fault at one random step,
// then as often as it takes to end it.
func (m *deleteModel) runWithFaults(rt *rapid.T, job model.Job, keepers map[string]string) {
	e := m.e
	fault := rapid.SampledFrom([]string{"none", "edit keeper", "replace copy", "cancel", "crash"}).Draw(rt, "fault")
	at := rapid.SampledFrom([]string{"beforeRemove", "afterMove", "beforeSettle"}).Draw(rt, "at")
	nth := rapid.IntRange(1, 3).Draw(rt, "nth")
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	reached := make(chan struct{})
	freeze := make(chan struct{})
	seen, done := 0, false
	hook := func(rel string) {
		seen++
		if done || seen != nth {
			return
		}
		done = true
		switch fault {
		case "edit keeper":
			if k := keepers[rel]; k != "" {
				m.userEdit(k)
			}
		case "replace copy":
			if rel != "" {
				m.userEdit(rel)
			}
		case "cancel":
			cancel()
		case "crash":
			close(reached)
			<-freeze // frozen until the test ends, its lease long gone
		}
	}
	x := New(e.worker, e.x.cfg)
	switch at {
	case "beforeRemove":
		x.beforeRemove = hook
	case "afterMove":
		x.afterMove = hook
	case "beforeSettle":
		x.beforeSettle = func() { hook("") }
	}
	m.workers++
	worker := fmt.Sprintf("w%d", m.workers)
	ran := make(chan error, 1)
	m.wg.Go(func() {
		_, err := x.Execute(ctx, m.claimAs(job, worker), nopReporter{})
		ran <- err
	})
	select {
	case err := <-ran:
		m.end(job, worker, err)
		if err == nil || fault != "cancel" {
			return
		}
		if rapid.Bool().Draw(rt, "retry after the cancel") {
			m.again(job)
		}
		return
	case <-reached:
	}
	m.frozen = append(m.frozen, freeze)
	m.again(job) // recovery hands the frozen worker's job to another
}

// again runs the job once more, as a new worker, with no fault.
func (m *deleteModel) again(job model.Job) {
	m.workers++
	worker := fmt.Sprintf("w%d", m.workers)
	_, err := m.e.x.Execute(m.e.ctx, m.claimAs(job, worker), nopReporter{})
	m.end(job, worker, err)
}

func (m *deleteModel) claimAs(job model.Job, worker string) model.Job {
	m.e.exec(`UPDATE jobs SET status = 'running', worker_id = ?, lease_expires_at = '2999-01-01 00:00:00.000',
		lease_epoch = lease_epoch + 1, started_at = COALESCE(started_at, created_at) WHERE id = ?`, worker, job.ID)
	return m.e.claimed(job, worker)
}

func (m *deleteModel) end(job model.Job, worker string, err error) {
	o := leases.JobOutcome{Status: protocol.JobCompleted}
	if err != nil {
		o = leases.JobOutcome{Status: protocol.JobCancelled, ErrorCode: protocol.ErrCancelled}
	}
	if ferr := leases.New(m.e.worker).FinishJob(m.e.ctx, m.e.claimed(job, worker).Fence(), o); ferr != nil {
		m.e.t.Fatalf("finish job %d as %s: %v (run: %v)", job.ID, worker, ferr, err)
	}
}

// restore brings back one ended job's trash, when its files are free.
func (m *deleteModel) restore(rt *rapid.T) {
	if len(m.jobs) == 0 {
		return
	}
	del := rapid.SampledFrom(m.jobs).Draw(rt, "restored job")
	job, err := duplicates.New(m.e.control).CreateRestore(m.e.ctx, del.ID, nil)
	switch protocol.CodeOf(err, "") {
	case protocol.CodeNotInTrash, protocol.CodeFilesBusy, protocol.CodeJobNotFound:
		return
	}
	m.e.must(err)
	m.again(job)
	res, err := duplicates.New(m.e.control).DeleteResults(m.e.ctx, job.ID)
	m.e.must(err)
	for _, r := range res {
		if r.Outcome != protocol.OutcomeRestored {
			continue
		}
		rel := m.pathOf(r.FileID)
		if got := m.e.read(rel); got != m.planned[rel] {
			rt.Fatalf("%s restored with other bytes than planned (%d bytes, planned %d)", rel, len(got), len(m.planned[rel]))
		}
	}
}

// purge empties every ended job's trash for good.
func (m *deleteModel) purge(rt *rapid.T) {
	e := m.e
	n, err := duplicates.New(e.control).SchedulePurges(e.ctx, time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), 100)
	e.must(err)
	if n == 0 {
		return
	}
	for {
		id, err := storetest.QueryInt(e.ctx, e.control, `SELECT coalesce(min(p.job_id), 0) FROM delete_plans p JOIN jobs j ON j.id = p.job_id
			WHERE p.action = 'purge' AND j.status = 'pending'`)
		e.must(err)
		if id == 0 {
			return
		}
		job, err := queue.New(e.control).GetJob(e.ctx, id)
		e.must(err)
		m.again(job)
	}
}

func (m *deleteModel) pathOf(id int64) string {
	for rel, i := range m.e.ids {
		if i == id {
			return rel
		}
	}
	return ""
}

// scan reads the library: the contents outside the trash, and the files in
// it.
func (m *deleteModel) scan() (outside map[string]bool, trash []string) {
	e := m.e
	outside = map[string]bool{}
	e.must(filepath.WalkDir(e.lib, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(e.lib, p)
		if strings.HasPrefix(rel, protocol.TrashDir+"/") {
			trash = append(trash, rel)
			return nil
		}
		b, err := os.ReadFile(p)
		outside[m.contentOf(b)] = true
		return err
	}))
	return outside, trash
}

// contentOf is the content a file's bytes hold: the bytes themselves, or,
// in a same_pages model, the book whose pages they are ("" for none).
func (m *deleteModel) contentOf(b []byte) string {
	if m.kind != protocol.PlanSamePages {
		return string(b)
	}
	pages, err := hashing.PageDigests(bytes.NewReader(b), int64(len(b)), "book.cbz")
	if err != nil {
		return ""
	}
	return m.books[pageListKey(pages)]
}

// pageListKey is an ordered list of page digests as one string.
func pageListKey(pages []hashes.PageDigest) string {
	var k strings.Builder
	for _, p := range pages {
		k.Write(p.Digest)
	}
	return k.String()
}

// check holds the invariants after a step.
func (m *deleteModel) check(rt *rapid.T, step int) {
	e := m.e
	outside, trash := m.scan()
	for _, rel := range m.paths {
		c := m.content[rel]
		if outside[c] || m.userLost[c] {
			continue
		}
		for _, other := range m.paths {
			if m.content[other] == c && !m.touched[other] {
				rt.Fatalf("step %d: %q is only in the trash, though %s was never changed by the user", step, c, other)
			}
		}
	}
	for _, rel := range trash {
		n, err := storetest.QueryInt(e.ctx, e.control, `SELECT (SELECT count(*) FROM delete_outcomes WHERE trash_path = ?)
			+ (SELECT count(*) FROM delete_intents WHERE trash_path = ?)`, rel, rel)
		e.must(err)
		if n == 0 {
			rt.Fatalf("step %d: %s is in the trash with no record", step, rel)
		}
	}
}

// thaw lets the frozen runs go on, now that their leases are long gone,
// and waits for them: whatever they write is refused.
func (m *deleteModel) thaw() {
	for _, f := range m.frozen {
		close(f)
	}
	m.wg.Wait()
}
