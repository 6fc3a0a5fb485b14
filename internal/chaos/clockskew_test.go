package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
	"github.com/bindery-nas/bindery/internal/pgtest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

const (
	// skewLease is every workerd's lease: short, so that a lease judged by
	// a skewed clock would change hands within the test, and still long
	// enough for heartbeats (every lease/3) from an emulated guest.
	skewLease = 4 * time.Second
	// skewBy is how far the guests' clocks are off: far more than any
	// lease, so a lease time taken from a guest's clock is plainly wrong.
	skewBy = 10 * time.Minute
	// skewExecutor makes every job outlast the test: a job changes hands
	// only when its lease is recovered, never because it finished.
	skewExecutor = "noop:10m"
	// skewTolerance is how far apart two clocks that should agree may be
	// read: the store carries the server's clock on a process's monotonic
	// clock, placed at the middle of a round trip, and the guest's round
	// trips cross an emulated network card.
	skewTolerance = 500 * time.Millisecond
)

// skewRig is PostgreSQL, controld and the host's workerd on this machine,
// and workerd in virtual machines whose wall clocks are minutes off.
type skewRig struct {
	ctx      context.Context
	c        *cluster
	kit      *vmKit
	db       *sql.DB // the database, read as a monitoring tool
	lib      int64
	guestURL string // the worker role's URL as a guest reaches it
}

func setupSkew(t *testing.T) *skewRig {
	t.Helper()
	if testing.Short() {
		t.Skip("boots two virtual machines under emulation")
	}
	r := &skewRig{ctx: t.Context(), kit: newVMKit(t)}
	ctx := r.ctx
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := buildTestDaemons(ctx, bin); err != nil {
		t.Fatal(err)
	}
	r.kit.makeInitrd(t, ctx, filepath.Join(bin, "workerd"))
	t.Setenv("BINDERY_TEST_EXECUTOR", skewExecutor) // the host's workerd
	srv := pgtest.Shared(t)
	db := pgtest.NewDatabase(t)
	role := fmt.Sprintf("skew_workerd_%d", os.Getpid())
	t.Cleanup(func() {
		_ = srv.Exec(context.Background(), db, "DROP OWNED BY "+role)
		_ = srv.Exec(context.Background(), "postgres", "DROP ROLE IF EXISTS "+role)
	})
	root := filepath.Join(dir, "library")
	if err := os.MkdirAll(filepath.Join(root, "skew"), 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.c, err = newCluster("skew", dir, bin, root, skewLease); err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, r.c)
	if err := r.c.usePostgres(ctx, srv.URL(db, pgtest.Superuser), srv.URL(db, role)); err != nil {
		t.Fatal(err)
	}
	r.guestURL = srv.URLAt(vmHostAddr, db, role)
	if err := r.c.startControl(ctx); err != nil {
		t.Fatal(err)
	}
	if r.db, err = checks.OpenRO(r.c.db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	if r.lib, err = r.c.setup(ctx, filepath.Join(root, "skew"), nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// bootVM boots a guest whose clock is skew off, checks that it is, and
// waits until its workerd registered. Its registration time must be the
// database's: the first time the guest's store writes.
func (r *skewRig) bootVM(t *testing.T, name string, skew time.Duration) *vm {
	t.Helper()
	start := time.Now()
	v, err := startVM(r.kit, name, r.c.logs, skew, map[string]string{
		"BINDERY_DB": r.guestURL, "BINDERY_LEASE": skewLease.String(),
		"BINDERY_TEST_EXECUTOR": skewExecutor, "BINDERY_THUMBNAIL_CONCURRENCY": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s console:\n%s", v.name, v.tail(30))
		}
		v.kill()
	})
	got, err := v.guestSkew(2 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d := got - skew; d < -time.Minute || d > time.Minute {
		t.Fatalf("%s's clock is %v off this machine's, want %v: the guest did not take the skewed clock", name, got, skew)
	}
	if err := r.c.waitRegistered(v.daemon); err != nil {
		t.Fatal(err)
	}
	var age float64
	if err := r.db.QueryRowContext(r.ctx, `SELECT EXTRACT(EPOCH FROM clock_timestamp() - started_at)
		FROM workers WHERE worker_id = ?`, name).Scan(&age); err != nil {
		t.Fatal(err)
	}
	// Registered seconds ago, during the boot; not in the future.
	if age < -skewTolerance.Seconds() || age > time.Minute.Seconds() {
		t.Errorf("%s's registration time is %v before the database's now: its times are not the database's",
			name, time.Duration(age*float64(time.Second)).Round(time.Millisecond))
	}
	t.Logf("%s up in %v, its clock %v off this machine's", name, time.Since(start).Round(time.Millisecond), got.Round(time.Second))
	return v
}

// newScan requests a scan and returns its job id. A subtest that ends
// with the job still active cancels it, so that the next one's scan is
// not refused (one scan or hash is active at a time).
func (r *skewRig) newScan(t *testing.T) int64 {
	t.Helper()
	var job struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	if err := r.c.api(r.ctx, http.MethodPost, "/jobs", map[string]any{"kind": "scan", "library_id": r.lib}, &job); err != nil {
		t.Fatal(err)
	}
	if job.ID == 0 || job.Status != "pending" {
		t.Fatalf("the scan was not created (job %d %q): another scan is active", job.ID, job.Status)
	}
	t.Cleanup(func() {
		if l := r.lease(t, job.ID); l.status != "cancelled" {
			r.cancel(t, job.ID)
		}
	})
	return job.ID
}

// cancel cancels the job and waits until it ends: its holder stops it, or
// controld does once its lease is recovered.
func (r *skewRig) cancel(t *testing.T, id int64) {
	t.Helper()
	if err := r.c.api(r.ctx, http.MethodPost, fmt.Sprintf("/jobs/%d/cancel", id), nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForState(t, "the job cancelled", time.Minute, func() (bool, string) {
		l := r.lease(t, id)
		return l.status == "cancelled", l.String()
	})
}

// hostWorker starts a workerd on this machine, for the subtest only.
func (r *skewRig) hostWorker(t *testing.T, slot string) *daemon {
	t.Helper()
	d, err := r.c.startWorker(slot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.alive() {
			d.kill()
		}
	})
	return d
}

// leaseRow is a job's lease as the database sees it, at the database's
// clock (now).
type leaseRow struct {
	status, worker, errorCode string
	expires, now              time.Time
}

// remaining is how long the lease has to run.
func (l leaseRow) remaining() time.Duration { return l.expires.Sub(l.now) }

func (l leaseRow) String() string {
	if l.expires.IsZero() {
		return fmt.Sprintf("%s by %q (error %q), no lease", l.status, l.worker, l.errorCode)
	}
	return fmt.Sprintf("%s by %q (error %q), lease expires %s, %v from the database's now", l.status, l.worker,
		l.errorCode, l.expires.Format("15:04:05.000"), l.remaining().Round(time.Millisecond))
}

func (r *skewRig) lease(t *testing.T, id int64) leaseRow {
	t.Helper()
	var l leaseRow
	var worker, code sql.NullString
	var expires sql.NullTime
	if err := r.db.QueryRowContext(r.ctx, `SELECT status, worker_id, error_code, lease_expires_at, clock_timestamp()
		FROM jobs WHERE id = ?`, id).Scan(&l.status, &worker, &code, &expires, &l.now); err != nil {
		t.Fatal(err)
	}
	l.worker, l.errorCode, l.expires = worker.String, code.String, expires.Time
	return l
}

// waitHeld waits until worker holds the job.
func (r *skewRig) waitHeld(t *testing.T, id int64, worker string) {
	t.Helper()
	testutil.WaitForState(t, worker+" holds job", time.Minute, func() (bool, string) {
		l := r.lease(t, id)
		return l.status == "running" && l.worker == worker, l.String()
	})
}

// keepsLease watches the job for the window: holder keeps it, and every
// lease time it writes is the database's now plus the lease, never a time
// from its own clock.
func (r *skewRig) keepsLease(t *testing.T, id int64, holder string, window time.Duration) {
	t.Helper()
	least := skewLease
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		l := r.lease(t, id)
		if l.status != "running" || l.worker != holder {
			t.Fatalf("job %d taken from %s: %s", id, holder, l)
		}
		if l.remaining() <= 0 || l.remaining() > skewLease+skewTolerance {
			t.Fatalf("job %d's lease is not the database's now + %v: %s", id, skewLease, l)
		}
		least = min(least, l.remaining())
	}
	t.Logf("%s kept job %d for %v, at least %v of its lease left each time", holder, id, window, least.Round(time.Millisecond))
}

// takenOver waits until to holds the job that from held (from has been
// killed), and checks that the job left from only once its last lease had
// expired on the database's clock. (Most of the wait is controld's retry
// service, which stamps the recovered job's retry time on one tick and
// requeues it on the next, 5 s apart.)
func (r *skewRig) takenOver(t *testing.T, id int64, from, to string) {
	t.Helper()
	var last time.Time // from's lease, as far as this watch saw it
	start := time.Now()
	testutil.WaitForState(t, to+" takes job over", time.Minute, func() (bool, string) {
		l := r.lease(t, id)
		if l.status == "running" && l.worker == from {
			last = l.expires
		} else if l.now.Before(last.Add(-skewTolerance)) {
			t.Fatalf("job %d left %s before its lease expired: %s, its lease expired at %s", id, from, l,
				last.Format("15:04:05.000"))
		}
		return l.status == "running" && l.worker == to, l.String()
	})
	l := r.lease(t, id)
	if l.remaining() <= 0 || l.remaining() > skewLease+skewTolerance {
		t.Errorf("%s's lease on job %d is not the database's now + %v: %s", to, id, skewLease, l)
	}
	t.Logf("%s took job %d over %v after %s stopped, %v after its lease expired", to, id,
		time.Since(start).Round(time.Millisecond), from, l.now.Sub(last).Round(time.Millisecond))
}

// TestClockSkewedWorkers runs workerd on hosts whose wall clocks are ten
// minutes off the database server's (issue 22): lease times are the
// server's, so a worker ahead does not take a lease another worker keeps,
// and a worker behind keeps the lease it holds; each takes over a lease
// only once it has expired on the server's clock.
func TestClockSkewedWorkers(t *testing.T) {
	r := setupSkew(t)
	window := 2 * skewLease // a lease that were not renewed would end within it

	t.Run("a worker ahead takes no live lease", func(t *testing.T) {
		host := r.hostWorker(t, "host-a")
		job := r.newScan(t)
		r.waitHeld(t, job, host.name)
		ahead := r.bootVM(t, "skew-ahead", skewBy)
		r.keepsLease(t, job, host.name, window)
		host.kill()
		r.takenOver(t, job, host.name, ahead.name)
		r.cancel(t, job)
	})

	t.Run("a worker behind keeps its lease", func(t *testing.T) {
		behind := r.bootVM(t, "skew-behind", -skewBy)
		job := r.newScan(t)
		r.waitHeld(t, job, behind.name)
		host := r.hostWorker(t, "host-b")
		r.keepsLease(t, job, behind.name, window)
		behind.kill()
		r.takenOver(t, job, behind.name, host.name)
		r.cancel(t, job)
		if err := host.terminate(30 * time.Second); err != nil {
			t.Error(err)
		}
	})

	if err := r.c.control().terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
