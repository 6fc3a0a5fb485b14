package api_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// python runs a Python 3 script with the database path as sys.argv[1]: the
// protocol seed's control plane writes rows this way, with isoformat()
// times ("2026-11-25T10:11:12.123456+00:00").
func (e *env) python(script string) {
	e.t.Helper()
	prelude := "import sqlite3, sys\nfrom datetime import datetime, timedelta, timezone\n" +
		"db = sqlite3.connect(sys.argv[1], timeout=10)\nnow = datetime.now(timezone.utc)\n"
	out, err := exec.Command("python3", "-c", prelude+script+"\ndb.commit()\n", e.path).CombinedOutput()
	if err != nil {
		e.t.Fatalf("python3: %v\n%s", err, out)
	}
}

// shell runs SQL in the sqlite3 shell, as an operator would.
func (e *env) shell(sql string) {
	e.t.Helper()
	out, err := exec.Command("sqlite3", "-cmd", ".timeout 10000", e.path, sql).CombinedOutput()
	if err != nil {
		e.t.Fatalf("sqlite3: %v\n%s", err, out)
	}
}

// TestThirdPartyTimes: rows written by Python's sqlite3 and by the sqlite3
// shell, with their own time spellings, page, recover, claim and gate
// checkpoints like Bindery's own.
func TestThirdPartyTimes(t *testing.T) {
	storetest.SkipOnPostgres(t, "third parties here are SQLite's own tools (Python's sqlite3, the sqlite3 shell)")
	e := setup(t)
	lib := e.library("a")
	e.shell(`INSERT INTO jobs (kind, status, created_at, updated_at, finished_at) VALUES
		('delete', 'completed', datetime('now', '-3 minutes'), datetime('now'), datetime('now')),
		('delete', 'completed', datetime('now', '-3 minutes'), datetime('now'), datetime('now')),
		('delete', 'failed', datetime('now', '-2 minutes'), datetime('now'), datetime('now'));`)
	e.python(`db.execute("INSERT INTO jobs (kind, status, library_id, worker_id, created_at, updated_at, started_at, lease_expires_at)"
    " VALUES ('scan', 'running', ?, 'ghost', ?, ?, ?, ?)",
    (` + strconv.FormatInt(lib, 10) + `, (now - timedelta(minutes=1)).isoformat(), now.isoformat(), now.isoformat(), (now - timedelta(seconds=5)).isoformat()))`)

	t.Run("stored canonically", func(t *testing.T) {
		e.t = t
		all, err := e.st.QueryText(e.ctx, `SELECT group_concat(created_at || '|' || updated_at || '|' || coalesce(lease_expires_at, finished_at), '|') FROM jobs`)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range strings.Split(all, "|") {
			if p, err := protocol.ParseTime(v); err != nil || protocol.FormatTime(p) != v {
				t.Fatalf("stored %q", v)
			}
		}
	})
	t.Run("pages", func(t *testing.T) {
		e.t = t
		ids := e.pageAll(t, "/api/v1/jobs?", "id", nil)
		if len(ids) != 4 {
			t.Fatalf("paged %v, want 4 jobs", ids)
		}
	})
	t.Run("recovers and claims", func(t *testing.T) {
		e.t = t
		var c struct{ Jobs int64 }
		r := e.call("POST", "/api/v1/maintenance/recover-stale", "")
		e.expect(r, 200, "")
		r.decode(t, &c)
		if c.Jobs != 1 {
			t.Fatalf("recovered %d jobs, want the expired scan", c.Jobs)
		}
		// The third party schedules the retry itself, in its spelling.
		e.python(`db.execute("UPDATE jobs SET retry_after = ? WHERE id = 4 AND status = 'retryable' AND error_code = 'lease_expired'",
    ((now - timedelta(seconds=1)).isoformat(),))`)
		if n, _, err := e.st.RequeueRetryableJobs(e.ctx, 5); err != nil || n != 1 {
			t.Fatalf("requeued %d, %v", n, err)
		}
		j, err := e.worker.ClaimJob(e.ctx, "w1", time.Minute, protocol.JobKindScan)
		if err != nil || j == nil || j.ID != 4 {
			t.Fatalf("claim: %+v %v", j, err)
		}
	})
	t.Run("checkpoint gate", func(t *testing.T) {
		e.t = t
		e.python(`db.execute("INSERT INTO wal_maintenance_jobs (status, execute_after, created_at, updated_at) VALUES ('completed', ?, ?, ?)",
    (now.isoformat(), now.isoformat(), now.isoformat()))`)
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{}`), 429, "checkpoint_too_soon")
		e.python(`db.execute("UPDATE wal_maintenance_jobs SET created_at = ?", ((now - timedelta(hours=1)).isoformat(),))`)
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{}`), 202, "")
	})
	t.Run("no time is refused, naming the column", func(t *testing.T) {
		e.t = t
		out, err := exec.Command("sqlite3", e.path, `UPDATE jobs SET updated_at = 'tomorrow' WHERE id = 1;`).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "jobs.updated_at: not a time") {
			t.Fatalf("sqlite3: %v %s", err, out)
		}
	})
}
