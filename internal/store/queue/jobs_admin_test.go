package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

type admEnv struct {
	ctx   context.Context
	st    *store.Store
	clock *storetest.Clock
}

func setupAdmin(t *testing.T) *admEnv {
	t.Helper()
	path := storetest.MustMigrate(t)
	clock := storetest.NewClock()
	return &admEnv{ctx: context.Background(), st: storetest.MustOpen(t, path, store.RoleControl, clock.Now), clock: clock}
}

// admJob inserts a job row the way a third party would, with plain SQL.
func (e *admEnv) admJob(t *testing.T, kind, status string, createdAt string) int64 {
	t.Helper()
	id, err := storetest.InsertID(e.ctx, e.st, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id`,
		kind, status, createdAt, createdAt)
	if err != nil {
		t.Fatalf("insert job: %v", err)
	}
	return id
}

func TestListJobsKeyset(t *testing.T) {
	e := setupAdmin(t)
	// 3 timestamps, 7 rows each: equal created_at across page boundaries.
	want := map[int64]bool{}
	for i := range 21 {
		ts := protocol.FormatTime(e.clock.Now().Add(time.Duration(i/7) * time.Second))
		want[e.admJob(t, "thumbnail", "completed", ts)] = true
	}
	t.Run("pages cover every row once in order", func(t *testing.T) {
		seen := map[int64]bool{}
		var cur *model.JobAnchor
		var prev *model.Job
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatal("paging does not end")
			}
			jobs, err := queue.New(e.st).ListJobs(e.ctx, queue.JobFilter{}, cur, 4)
			if err != nil {
				t.Fatal(err)
			}
			for i := range jobs {
				j := jobs[i]
				if seen[j.ID] {
					t.Fatalf("job %d twice", j.ID)
				}
				seen[j.ID] = true
				if prev != nil && (j.CreatedAt.After(prev.CreatedAt.Time) || (j.CreatedAt.Equal(prev.CreatedAt.Time) && j.ID > prev.ID)) {
					t.Fatalf("order broken: %d after %d", j.ID, prev.ID)
				}
				prev = &j
			}
			if len(jobs) < 4 {
				break
			}
			last := jobs[len(jobs)-1]
			cur = &model.JobAnchor{CreatedAt: last.CreatedAt.String(), ID: last.ID}
		}
		if len(seen) != len(want) {
			t.Fatalf("saw %d of %d jobs", len(seen), len(want))
		}
	})
	t.Run("concurrent inserts never break paging", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				ts := protocol.FormatTime(e.clock.Now().Add(time.Duration(i%3) * time.Second))
				if _, err := storetest.Exec(e.ctx, e.st, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('delete','completed',?,?)`, ts, ts); err != nil {
					t.Error(err)
				}
			}
		}()
		seen := map[int64]bool{}
		var cur *model.JobAnchor
		for {
			jobs, err := queue.New(e.st).ListJobs(e.ctx, queue.JobFilter{Kind: protocol.JobKindThumbnail}, cur, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if seen[j.ID] {
					t.Fatalf("job %d twice", j.ID)
				}
				seen[j.ID] = true
			}
			if len(jobs) < 5 {
				break
			}
			cur = &model.JobAnchor{CreatedAt: jobs[len(jobs)-1].CreatedAt.String(), ID: jobs[len(jobs)-1].ID}
		}
		wg.Wait()
		if len(seen) != len(want) {
			t.Fatalf("saw %d of %d pre-existing jobs", len(seen), len(want))
		}
	})
	t.Run("filters", func(t *testing.T) {
		jobs, err := queue.New(e.st).ListJobs(e.ctx, queue.JobFilter{Status: protocol.JobPending}, nil, 50)
		if err != nil || len(jobs) != 0 {
			t.Fatalf("pending jobs = %d, %v", len(jobs), err)
		}
		jobs, err = queue.New(e.st).ListJobs(e.ctx, queue.JobFilter{LibraryID: new(int64(1))}, nil, 50)
		if err != nil || len(jobs) != 0 {
			t.Fatalf("library jobs = %d, %v", len(jobs), err)
		}
	})
}

// TestListJobsPlan asserts the jobs list walks an index in order: no temp
// b-tree for ORDER BY, with and without a cursor and filters.
func TestListJobsPlan(t *testing.T) {
	storetest.SkipOnPostgres(t, "reads SQLite's EXPLAIN QUERY PLAN")
	e := setupAdmin(t)
	cur := &model.JobAnchor{CreatedAt: "2026-01-01 00:00:00.000", ID: 10}
	cases := []struct {
		name  string
		f     queue.JobFilter
		index string
	}{
		{"all", queue.JobFilter{}, "ix_jobs_created"},
		{"kind", queue.JobFilter{Kind: protocol.JobKindScan}, "ix_jobs_created"},
		{"kind and status", queue.JobFilter{Kind: protocol.JobKindScan, Status: protocol.JobCompleted}, "ix_jobs_status_created"},
		{"status", queue.JobFilter{Status: protocol.JobPending}, "ix_jobs_status_created"},
		{"library", queue.JobFilter{LibraryID: new(int64(3))}, "ix_jobs_library"},
	}
	for _, c := range cases {
		for _, after := range []*model.JobAnchor{nil, cur} {
			t.Run(fmt.Sprintf("%s cursor=%v", c.name, after != nil), func(t *testing.T) {
				plan, err := queue.New(e.st).ExplainListJobs(e.ctx, c.f, after)
				if err != nil {
					t.Fatal(err)
				}
				text := strings.Join(plan, "\n")
				if !strings.Contains(text, c.index) || strings.Contains(text, "TEMP B-TREE") {
					t.Fatalf("plan does not walk %s:\n%s", c.index, text)
				}
			})
		}
	}
}

func TestCancelJob(t *testing.T) {
	e := setupAdmin(t)
	now := protocol.FormatTime(e.clock.Now())
	pending := e.admJob(t, "scan", "pending", now)
	running := e.admJob(t, "thumbnail", "running", now)
	done := e.admJob(t, "delete", "completed", now)
	t.Run("pending becomes cancelled", func(t *testing.T) {
		j, err := queue.New(e.st).CancelJob(e.ctx, pending)
		if err != nil || j.Status != "cancelled" || (j.FinishedAt == nil) || model.Deref(j.ErrorCode) != protocol.ErrCancelled {
			t.Fatalf("cancel pending: %+v, %v", j, err)
		}
	})
	t.Run("running gets cancel_requested", func(t *testing.T) {
		j, err := queue.New(e.st).CancelJob(e.ctx, running)
		if err != nil || j.Status != "running" || !j.CancelRequested {
			t.Fatalf("cancel running: %+v, %v", j, err)
		}
	})
	t.Run("terminal is job_terminal", func(t *testing.T) {
		before, _ := queue.New(e.st).GetJob(e.ctx, done)
		_, err := queue.New(e.st).CancelJob(e.ctx, done)
		if !errors.Is(err, store.ErrConflict) || protocol.CodeOf(err, "") != protocol.CodeJobTerminal {
			t.Fatalf("cancel completed: %v", err)
		}
		after, _ := queue.New(e.st).GetJob(e.ctx, done)
		if before != after {
			t.Fatalf("terminal job changed: %+v → %+v", before, after)
		}
	})
	t.Run("unknown is not found", func(t *testing.T) {
		_, err := queue.New(e.st).CancelJob(e.ctx, 9999)
		if !errors.Is(err, store.ErrNotFound) || protocol.CodeOf(err, "") != "job_not_found" {
			t.Fatalf("cancel unknown: %v", err)
		}
	})
}
