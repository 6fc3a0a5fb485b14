package api_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// The third parties of protocol §9 write with nothing but SQL, in their own
// tools: on SQLite the sqlite3 shell and Python's sqlite3 module, on
// PostgreSQL psql. Each test here runs on both engines.

// python runs a Python 3 script with the database path as sys.argv[1]: the
// protocol seed's control plane writes rows this way, with isoformat()
// times ("2026-11-25T10:11:12.123456+00:00"). SQLite only.
func (e *env) python(script string) {
	e.t.Helper()
	prelude := "import sqlite3, sys\nfrom datetime import datetime, timedelta, timezone\n" +
		"db = sqlite3.connect(sys.argv[1], timeout=10)\nnow = datetime.now(timezone.utc)\n"
	out, err := exec.Command("python3", "-c", prelude+script+"\ndb.commit()\n", e.path).CombinedOutput()
	if err != nil {
		e.t.Fatalf("python3: %v\n%s", err, out)
	}
}

// shell runs SQL as an operator would: in the sqlite3 shell, or in psql on
// PostgreSQL (sql is then the engine's own SQL).
func (e *env) shell(sql string) {
	e.t.Helper()
	if out, err := e.shellCmd(sql).CombinedOutput(); err != nil {
		e.t.Fatalf("%s: %v\n%s", e.shellCmd("").Path, err, out)
	}
}

func (e *env) shellCmd(sql string) *exec.Cmd {
	if storetest.Postgres() {
		return exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", e.path, "-c", sql)
	}
	return exec.Command("sqlite3", "-cmd", ".timeout 10000", e.path, sql)
}

// isoformat is Python's datetime.isoformat() of now+d in UTC, the spelling
// a third party writes through psql on PostgreSQL.
func isoformat(d time.Duration) string {
	return time.Now().UTC().Add(d).Format("2006-01-02T15:04:05.000000-07:00")
}

// TestThirdPartyTimes: rows written by a third party, with its own time
// spellings (Python's sqlite3 and the sqlite3 shell; ISO 8601 with an
// offset through psql), page, recover, claim and gate checkpoints like
// Bindery's own.
func TestThirdPartyTimes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("a")
	if storetest.Postgres() {
		e.shell(`INSERT INTO jobs (kind, status, created_at, updated_at, finished_at) VALUES
			('delete', 'completed', now() - interval '3 minutes', now(), now()),
			('delete', 'completed', now() - interval '3 minutes', now(), now()),
			('delete', 'failed', now() - interval '2 minutes', now(), now());
			INSERT INTO jobs (kind, status, library_id, worker_id, created_at, updated_at, started_at, lease_expires_at)
			VALUES ('scan', 'running', ` + strconv.FormatInt(lib, 10) + `, 'ghost', '` + isoformat(-time.Minute) + `', '` +
			isoformat(0) + `', '` + isoformat(0) + `', '` + isoformat(-5*time.Second) + `');`)
	} else {
		e.shell(`INSERT INTO jobs (kind, status, created_at, updated_at, finished_at) VALUES
		('delete', 'completed', datetime('now', '-3 minutes'), datetime('now'), datetime('now')),
		('delete', 'completed', datetime('now', '-3 minutes'), datetime('now'), datetime('now')),
		('delete', 'failed', datetime('now', '-2 minutes'), datetime('now'), datetime('now'));`)
		e.python(`db.execute("INSERT INTO jobs (kind, status, library_id, worker_id, created_at, updated_at, started_at, lease_expires_at)"
    " VALUES ('scan', 'running', ?, 'ghost', ?, ?, ?, ?)",
    (` + strconv.FormatInt(lib, 10) + `, (now - timedelta(minutes=1)).isoformat(), now.isoformat(), now.isoformat(), (now - timedelta(seconds=5)).isoformat()))`)
	}

	t.Run("stored canonically", func(t *testing.T) {
		e.t = t
		times := storetest.TimeText("created_at") + ` || '|' || ` + storetest.TimeText("updated_at") + ` || '|' || ` +
			storetest.TimeText("coalesce(lease_expires_at, finished_at)")
		all, err := storetest.QueryText(e.ctx, e.st, `SELECT `+storetest.Concat(times, "|", "id")+` FROM jobs`)
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
		const retry = `UPDATE jobs SET retry_after = '%s' WHERE id = 4 AND status = 'retryable' AND error_code = 'lease_expired'`
		if storetest.Postgres() {
			e.shell(strings.Replace(retry, "%s", isoformat(-time.Second), 1))
		} else {
			e.python(`db.execute("UPDATE jobs SET retry_after = ? WHERE id = 4 AND status = 'retryable' AND error_code = 'lease_expired'",
    ((now - timedelta(seconds=1)).isoformat(),))`)
		}
		if n, _, err := leases.New(e.st).RequeueRetryableJobs(e.ctx, 5); err != nil || n != 1 {
			t.Fatalf("requeued %d, %v", n, err)
		}
		j, err := leases.New(e.worker).ClaimJob(e.ctx, "w1", time.Minute, protocol.JobKindScan)
		if err != nil || j == nil || j.ID != 4 {
			t.Fatalf("claim: %+v %v", j, err)
		}
	})
	t.Run("checkpoint gate", func(t *testing.T) {
		storetest.SkipOnPostgres(t, "checkpoints are SQLite's (TestWALAndMaintenance sees PostgreSQL's 409)")
		e.t = t
		e.python(`db.execute("INSERT INTO wal_maintenance_jobs (status, execute_after, created_at, updated_at) VALUES ('completed', ?, ?, ?)",
    (now.isoformat(), now.isoformat(), now.isoformat()))`)
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{}`), 429, "checkpoint_too_soon")
		e.python(`db.execute("UPDATE wal_maintenance_jobs SET created_at = ?", ((now - timedelta(hours=1)).isoformat(),))`)
		e.expect(e.call("POST", "/api/v1/maintenance/wal-checkpoint", `{}`), 202, "")
	})
	t.Run("no time is refused, naming the column", func(t *testing.T) {
		e.t = t
		want := "jobs.updated_at: not a time"
		if storetest.Postgres() {
			want = `invalid input syntax for type timestamp with time zone: "sometime"`
		}
		out, err := e.shellCmd(`UPDATE jobs SET updated_at = 'sometime' WHERE id = 1;`).CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("shell: %v %s", err, out)
		}
	})
}

// TestThirdPartyHoldsSlot: a third party takes the single-active slot with
// protocol §9.1's INSERT; a scan asked for through the API then waits in
// the queue, the third party's second INSERT fails on the unique index,
// and its queue INSERT … ON CONFLICT DO NOTHING joins the same entry.
func TestThirdPartyHoldsSlot(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.library("a"), e.library("b")
	now := `strftime('%Y-%m-%d %H:%M:%f','now')`
	if storetest.Postgres() {
		now = `now()`
	}
	take := `INSERT INTO jobs (kind, status, library_id, priority, payload, created_at, updated_at)
		VALUES ('scan', 'pending', ` + strconv.FormatInt(a, 10) + `, 'normal', '{}', ` + now + `, ` + now + `);`
	e.shell(take)
	r := e.call("POST", "/api/v1/jobs", `{"kind":"scan","library_id":`+strconv.FormatInt(b, 10)+`}`)
	e.expect(r, 202, "")
	var q struct{ Queued struct{ ID, Position int64 } }
	r.decode(t, &q)
	if q.Queued.ID == 0 || q.Queued.Position != 1 {
		t.Fatalf("POST /jobs while a third party holds the slot: %s", r.Body)
	}
	if out, err := e.shellCmd(take).CombinedOutput(); err == nil {
		t.Fatalf("second INSERT took a busy slot: %s", out)
	}
	e.shell(`INSERT INTO scan_requests (kind, library_id, priority, reason, created_at, updated_at)
		VALUES ('scan', ` + strconv.FormatInt(b, 10) + `, 'normal', 'cron', ` + now + `, ` + now + `) ON CONFLICT DO NOTHING;`)
	if n, err := storetest.QueryInt(e.ctx, e.st, `SELECT count(*) FROM scan_requests`); err != nil || n != 1 {
		t.Fatalf("%d queue entries (%v), want one", n, err)
	}
}
