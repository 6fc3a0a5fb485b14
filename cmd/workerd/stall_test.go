package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestStalledDisk: another process holds the database's write lock for
// longer than a lease while workerd runs a job, so every heartbeat stalls.
// workerd gives the job up within the lease although its heartbeat is still
// blocked; once the lock is gone the job is recovered once, and nothing the
// stalled worker wrote afterwards lands.
func TestStalledDisk(t *testing.T) {
	t.Parallel()
	if storetest.Postgres() {
		t.Skip("SQLite-only: the stall is a BEGIN IMMEDIATE holding SQLite's one write lock")
	}
	path := storetest.MustMigrate(t)
	tp := thirdParty(t, path)
	w := startWorker(t, path, t.TempDir(), "w", "noop:1m")
	id := insertID(t, tp, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('hash', `+tpNow+`, `+tpNow+`)`)
	waitCount(t, tp, 1, 10*time.Second, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'running'`, id)

	// The lease is 2 s: hold the lock for 3.5 leases.
	ctx := context.Background()
	conn, err := tp.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(7 * time.Second)
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	control := storetest.MustOpen(t, path, store.RoleControl, nil)
	if _, err := leases.New(control).RecoverStale(ctx); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var s string
		if err := tp.QueryRow(`SELECT status || ',' || ifnull(error_code, '-') || ',' || ifnull(worker_id, '-') || ',' || attempt || ',' || updated_at
			FROM jobs WHERE id = ?`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Which verdict the recovery reaches is a race the protocol allows
	// (store/crashes.go): the worker's liveness write, queued behind the
	// lock, may land before the recovery runs (alive: lease_lost, no
	// attempt burned) or not (silent 3.5 leases: lease_expired). Either
	// way the row is recovered exactly once.
	recovered := state()
	if !strings.HasPrefix(recovered, "retryable,lease_expired,-,1,") && !strings.HasPrefix(recovered, "retryable,lease_lost,-,1,") {
		t.Fatalf("after the stall: %s, want recovered once", recovered)
	}
	// The stalled heartbeat (up to a busy timeout behind) and anything
	// else the worker had queued now get their turn: none may land.
	time.Sleep(3 * time.Second)
	if again := state(); again != recovered {
		t.Fatalf("a late write landed: %s, then %s", recovered, again)
	}
	if n, err := leases.New(control).RecoverStale(ctx); err != nil || n.Total() != 0 {
		t.Fatalf("second recovery: %+v %v", n, err)
	}
	w.stop(t, 10*time.Second)
	if log := w.stderr.String(); !strings.Contains(log, "no heartbeat succeeded for a whole lease") {
		t.Fatalf("workerd did not give the job up on its own:\n%s", log)
	}
}
