package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestRequestScheduledScans(t *testing.T) {
	ctx := context.Background()
	e := setupQueue(t, 3)
	// library 0: every 60 min; library 1: manual only; library 2: every 10 min
	for i, minutes := range []int{60, 0, 10} {
		if _, err := storetest.Exec(ctx, e.st, `UPDATE libraries SET scan_interval_minutes = ? WHERE id = ?`, minutes, e.libs[i]); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (jobs, queued int64) {
		jobs, _ = storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM jobs WHERE kind = 'scan'`)
		queued, _ = storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM scan_requests WHERE kind = 'scan'`)
		return
	}
	out, err := queue.New(e.st).RequestScheduledScans(ctx)
	if err != nil || len(out) != 2 {
		t.Fatalf("first pass: %d outcomes, %v", len(out), err)
	}
	if !out[0].Created || out[1].Queued == nil || out[1].Queued.Priority != "normal" || out[1].Queued.Reason != "schedule" {
		t.Fatalf("outcomes %+v %+v", out[0], out[1])
	}
	if out, _ := queue.New(e.st).RequestScheduledScans(ctx); len(out) != 0 {
		t.Fatalf("not due yet but requested %d", len(out))
	}
	// controld was down for 5 hours: one request each, not one per tick
	if _, err := storetest.Exec(ctx, e.st, `UPDATE jobs SET status = 'completed'`); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Exec(ctx, e.st, `DELETE FROM scan_requests`); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5 * time.Hour)
	out, err = queue.New(e.st).RequestScheduledScans(ctx)
	if err != nil || len(out) != 2 {
		t.Fatalf("after downtime: %d, %v", len(out), err)
	}
	if out, _ := queue.New(e.st).RequestScheduledScans(ctx); len(out) != 0 {
		t.Fatalf("catch-up requested %d more", len(out))
	}
	jobs, queued := count()
	if jobs != 2 || queued != 1 {
		t.Fatalf("jobs %d queued %d", jobs, queued)
	}
	// only the 10-minute library is due 10 minutes later
	e.clock.Advance(10 * time.Minute)
	out, _ = queue.New(e.st).RequestScheduledScans(ctx)
	if len(out) != 1 || out[0].Queued == nil || *out[0].Queued.LibraryID != e.libs[2] {
		t.Fatalf("10 min later: %+v", out)
	}
	// a manual request counts as the last request
	e.clock.Advance(9 * time.Minute)
	e.request(t, protocol.JobKindScan, e.libs[2], protocol.PriorityHigh)
	e.clock.Advance(5 * time.Minute)
	if out, _ := queue.New(e.st).RequestScheduledScans(ctx); len(out) != 0 {
		t.Fatalf("scheduled right after a manual request: %+v", out)
	}
}

func TestFollowUpScan(t *testing.T) {
	ctx := context.Background()
	e := setupQueue(t, 2)
	scan := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh).Job
	if _, _, err := queue.New(e.st).FollowUpJob(ctx, scan.ID, true); err == nil {
		t.Fatal("followed up a pending scan")
	}
	if todo, _ := queue.New(e.st).JobsToFollowUp(ctx, 0, 10); len(todo) != 0 {
		t.Fatalf("pending scan listed: %+v", todo)
	}
	e.finish(t, scan.ID, protocol.JobCompleted)
	todo, err := queue.New(e.st).JobsToFollowUp(ctx, 0, 10)
	if err != nil || len(todo) != 1 || todo[0].ID != scan.ID {
		t.Fatalf("todo %+v %v", todo, err)
	}
	done, hash, err := queue.New(e.st).FollowUpJob(ctx, scan.ID, true)
	if err != nil || !done || hash == nil || !hash.Created || hash.Job.Kind != "hash" || hash.Job.Priority != "normal" ||
		hash.Job.Library() != e.libs[0] {
		t.Fatalf("follow up: %v %+v %v", done, hash, err)
	}
	hashID := hash.Job.ID
	done, hash, err = queue.New(e.st).FollowUpJob(ctx, scan.ID, true)
	if err != nil || done || hash != nil {
		t.Fatalf("second follow up: %v %+v %v", done, hash, err)
	}
	if todo, _ := queue.New(e.st).JobsToFollowUp(ctx, 0, 10); len(todo) != 0 {
		t.Fatalf("still listed: %+v", todo)
	}
	// a failed scan is followed up without a hash job
	e.finish(t, hashID, protocol.JobCompleted)
	failed := e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityHigh).Job
	e.finish(t, failed.ID, protocol.JobFailed)
	done, hash, err = queue.New(e.st).FollowUpJob(ctx, failed.ID, true)
	if err != nil || !done || hash != nil {
		t.Fatalf("failed scan: %v %+v %v", done, hash, err)
	}
	if n, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM jobs WHERE kind = 'hash'`); n != 1 {
		t.Fatalf("%d hash jobs", n)
	}
	if n, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM job_followups`); n != 2 {
		t.Fatalf("%d follow-up rows", n)
	}
}

func TestFollowUpYieldedHash(t *testing.T) {
	ctx := context.Background()
	e := setupQueue(t, 2)
	hash := e.request(t, protocol.JobKindHash, e.libs[0], protocol.PriorityNormal).Job
	scan := e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityNormal).Queued
	if scan == nil {
		t.Fatal("scan not queued behind the running hash")
	}
	// The worker ends the hash job completed, with yielded in its result.
	e.finish(t, hash.ID, protocol.JobCompleted)
	if _, err := storetest.Exec(ctx, e.st, `UPDATE jobs SET result = '{"hashed":3,"yielded":1}' WHERE id = ?`, hash.ID); err != nil {
		t.Fatal(err)
	}
	done, again, err := queue.New(e.st).FollowUpJob(ctx, hash.ID, false)
	if err != nil || !done || again == nil || again.Queued == nil || again.Queued.Kind != "hash" ||
		*again.Queued.LibraryID != e.libs[0] || again.Position != 2 {
		t.Fatalf("follow up of a yielded hash (even with scan.hash.mode off): %v %+v %v", done, again, err)
	}
	if done, _, err := queue.New(e.st).FollowUpJob(ctx, hash.ID, false); err != nil || done {
		t.Fatalf("second follow up: %v %v", done, err)
	}
	// The scan runs first, then the resumed hash.
	first, err := queue.New(e.st).PromoteQueueHead(ctx)
	if err != nil || first == nil || first.Kind != "scan" {
		t.Fatalf("head = %+v %v", first, err)
	}
	// A hash that ended without yielding needs no follow-up.
	e.finish(t, first.ID, protocol.JobCompleted)
	plain, err := queue.New(e.st).PromoteQueueHead(ctx)
	if err != nil || plain == nil || plain.Kind != "hash" {
		t.Fatalf("second head = %+v %v", plain, err)
	}
	e.finish(t, plain.ID, protocol.JobCompleted)
	todo, err := queue.New(e.st).JobsToFollowUp(ctx, 0, 10)
	if err != nil || len(todo) != 2 || todo[0].ID != first.ID || todo[1].ID != plain.ID {
		t.Fatalf("to look at: %+v %v; want the scan and the plain hash", todo, err)
	}
	if done, again, err := queue.New(e.st).FollowUpJob(ctx, plain.ID, true); err != nil || done || again != nil {
		t.Fatalf("follow up of a plain hash: %v %+v %v; want it only marked", done, again, err)
	}
	if todo, err := queue.New(e.st).JobsToFollowUp(ctx, 0, 10); err != nil || len(todo) != 1 || todo[0].ID != first.ID {
		t.Fatalf("to look at: %+v %v; want only the scan", todo, err)
	}
	if n, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM job_followups WHERE job_id = ?`, plain.ID); n != 0 {
		t.Fatal("a plain hash got a follow-up row")
	}
}

func TestQueueRunsScansBeforeHashes(t *testing.T) {
	ctx := context.Background()
	e := setupQueue(t, 2)
	running := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal).Job
	hash := e.request(t, protocol.JobKindHash, e.libs[1], protocol.PriorityHigh).Queued
	scan := e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityNormal)
	if hash == nil || scan.Queued == nil || scan.Position != 1 {
		t.Fatalf("a normal scan queued after a high hash is at %d, want 1", scan.Position)
	}
	q, err := queue.New(e.st).ListQueue(ctx)
	if err != nil || len(q) != 2 || q[0].Kind != "scan" || q[1].Kind != "hash" {
		t.Fatalf("queue %+v %v", q, err)
	}
	if got, pos, err := queue.New(e.st).QueueEntry(ctx, hash.ID); err != nil || got.ID != hash.ID || pos != 2 {
		t.Fatalf("QueueEntry(hash) = %+v at %d, %v; want place 2", got, pos, err)
	}
	if again := e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityNormal); again.Created || again.Queued == nil ||
		again.Queued.ID != scan.Queued.ID {
		t.Fatalf("a second request for the queued scan: %+v, want the entry, not created", again)
	}
	e.finish(t, running.ID, protocol.JobCompleted)
	if j, err := queue.New(e.st).PromoteQueueHead(ctx); err != nil || j == nil || j.Kind != "scan" {
		t.Fatalf("head = %+v %v", j, err)
	}
}

// TestFollowUpMarks: a job is listed for its follow-up once it is
// finished, whatever jobs with higher ids did before it (no id floor),
// and no longer once it is marked followed_up.
func TestFollowUpMarks(t *testing.T) {
	ctx := context.Background()
	e := setupQueue(t, 2)
	listed := func() []int64 {
		t.Helper()
		todo, err := queue.New(e.st).JobsToFollowUp(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, j := range todo {
			ids = append(ids, j.ID)
		}
		return ids
	}
	first := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal).Job
	if _, err := storetest.Exec(ctx, e.st, `UPDATE jobs SET status = 'retryable' WHERE id = ?`, first.ID); err != nil {
		t.Fatal(err)
	}
	second := e.request(t, protocol.JobKindScan, e.libs[1], protocol.PriorityNormal).Job
	e.finish(t, second.ID, protocol.JobCompleted)
	if ids := listed(); len(ids) != 1 || ids[0] != second.ID {
		t.Fatalf("listed %v, want the finished %d only", ids, second.ID)
	}
	if done, _, err := queue.New(e.st).FollowUpJob(ctx, second.ID, false); err != nil || !done {
		t.Fatalf("follow up %d: %v %v", second.ID, done, err)
	}
	if ids := listed(); len(ids) != 0 {
		t.Fatalf("listed %v after the follow-up", ids)
	}
	// The retryable job below it ends later: it is listed all the same.
	e.finish(t, first.ID, protocol.JobFailed)
	if ids := listed(); len(ids) != 1 || ids[0] != first.ID {
		t.Fatalf("listed %v, want the late %d", ids, first.ID)
	}
	if n, _ := storetest.QueryInt(ctx, e.st, `SELECT count(*) FROM jobs WHERE followed_up = 1`); n != 1 {
		t.Fatalf("%d jobs marked, want 1", n)
	}
}
