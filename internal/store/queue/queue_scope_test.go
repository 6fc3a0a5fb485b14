package queue_test

import (
	"reflect"
	"testing"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func (e *queueEnv) requestPaths(t *testing.T, libID int64, paths ...string) queue.RequestOutcome {
	t.Helper()
	out, err := queue.New(e.st).RequestJob(e.ctx, queue.JobRequest{Kind: protocol.JobKindScan, LibraryID: lib(libID),
		Priority: protocol.PriorityNormal, Reason: "watch", Paths: paths})
	if err != nil {
		t.Fatalf("request scan %d %v: %v", libID, paths, err)
	}
	return out
}

func jobPaths(t *testing.T, j *model.Job) []string {
	t.Helper()
	var p protocol.ScanPayload
	if err := protocol.DecodePayload(j.Payload, &p); err != nil {
		t.Fatalf("job %d payload %q: %v", j.ID, j.Payload, err)
	}
	return p.Paths
}

// Folder requests merge: into a pending job's payload while nobody claimed
// it, into the one queue entry of the library while a scan runs, and a
// library-wide request absorbs them all.
func TestFolderScopedRequestsMerge(t *testing.T) {
	t.Parallel()
	e := setupQueue(t, 2)
	l1, l2 := e.libs[0], e.libs[1]
	first := e.requestPaths(t, l1, "B/")
	if first.Job == nil || !first.Created || !reflect.DeepEqual(jobPaths(t, first.Job), []string{"B/"}) {
		t.Fatalf("first folder request: %+v", first)
	}
	widened := e.requestPaths(t, l1, "A/", "B/x/")
	if widened.Job == nil || widened.Job.ID != first.Job.ID || !reflect.DeepEqual(jobPaths(t, widened.Job), []string{"A/", "B/"}) {
		t.Fatalf("pending job not widened: %+v", widened.Job)
	}
	if _, err := storetest.Exec(e.ctx, e.st, `UPDATE jobs SET status = 'running' WHERE id = ?`, first.Job.ID); err != nil {
		t.Fatal(err)
	}
	q1 := e.requestPaths(t, l1, "B/")
	if q1.Queued == nil || !q1.Created || !reflect.DeepEqual(q1.Queued.ScanPaths(), []string{"B/"}) {
		t.Fatalf("a folder change during a running scan must queue: %+v", q1)
	}
	q2 := e.requestPaths(t, l1, "C/", "B/deep/")
	if q2.Queued == nil || q2.Created || q2.Queued.ID != q1.Queued.ID || !reflect.DeepEqual(q2.Queued.ScanPaths(), []string{"B/", "C/"}) {
		t.Fatalf("overlapping folders not merged in the entry: %+v %v", q2, q2.Queued.ScanPaths())
	}
	e.requestPaths(t, l2, "Z/")
	wide := e.request(t, protocol.JobKindScan, l1, protocol.PriorityNormal)
	if wide.Queued == nil || wide.Queued.ID != q1.Queued.ID || wide.Queued.Paths.Valid {
		t.Fatalf("a library-wide request must absorb the folders: %+v", wide.Queued)
	}
	again := e.requestPaths(t, l1, "D/")
	if again.Queued == nil || again.Queued.Paths.Valid {
		t.Fatalf("a folder request must not narrow a library-wide entry: %+v", again.Queued)
	}
	e.finish(t, first.Job.ID, protocol.JobCompleted)
	next, err := queue.New(e.st).PromoteQueueHead(e.ctx)
	if err != nil || next == nil || next.Payload != "{}" || next.Library() != l1 {
		t.Fatalf("promoted %+v, %v; want library %d, whole library", next, err, l1)
	}
	e.finish(t, next.ID, protocol.JobCompleted)
	last, err := queue.New(e.st).PromoteQueueHead(e.ctx)
	if err != nil || last == nil || !reflect.DeepEqual(jobPaths(t, last), []string{"Z/"}) {
		t.Fatalf("promoted %+v, %v; want Z/ of library %d", last, err, l2)
	}
}

// The database refuses a paths column that is not a non-empty JSON array.
func TestScanRequestPathsCheck(t *testing.T) {
	t.Parallel()
	e := setupQueue(t, 1)
	now := protocol.FormatTime(e.st.Now())
	for _, bad := range []string{`"A/"`, `[]`, `{}`, `not json`} {
		if _, err := storetest.Exec(e.ctx, e.st, `INSERT INTO scan_requests (kind, library_id, priority, reason, paths, created_at, updated_at)
			VALUES ('scan', ?, 'normal', 'x', ?, ?, ?)`, e.libs[0], bad, now, now); err == nil {
			t.Errorf("paths %s accepted", bad)
		}
	}
	if _, err := queue.New(e.st).RequestJob(e.ctx, queue.JobRequest{Kind: protocol.JobKindHash, Priority: protocol.PriorityNormal, Paths: []string{"A/"}}); err == nil {
		t.Error("a hash request naming folders was accepted")
	}
}
