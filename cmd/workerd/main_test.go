package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/internal/arenas"
	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/pgtest"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// workerdBin is the workerd binary built once for the tests that run real
// processes.
var workerdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "workerd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerdBin = filepath.Join(dir, "workerd")
	out, err := exec.Command("go", "build", "-tags", "bindery_testexec", "-o", workerdBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build workerd: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.StopShared()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runMain runs the command line in-process and returns its exit code and
// output.
func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &out}
	return m.Run(context.Background(), args), out.String()
}

func TestRefusesDatabases(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing", func(t *testing.T) {
		code, out := runMain(t, "run", "--db", filepath.Join(dir, "none.db"))
		if code != cli.ExitDatabase || !strings.Contains(out, "never creates it") {
			t.Fatalf("exit %d: %s", code, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "none.db")); err == nil {
			t.Fatal("workerd created the database")
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		skipSQLiteFile(t)
		p := filepath.Join(dir, "corrupt.db")
		os.WriteFile(p, bytes.Repeat([]byte("not sqlite "), 500), 0o644)
		if code, out := runMain(t, "run", "--db", storetest.WorkerDB(t, p)); code != cli.ExitDatabase {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("not migrated", func(t *testing.T) {
		skipSQLiteFile(t)
		p := filepath.Join(dir, "empty.db")
		db, _ := sql.Open("sqlite3", p)
		db.Exec(`CREATE TABLE x (y)`)
		db.Close()
		code, out := runMain(t, "run", "--db", storetest.WorkerDB(t, p))
		if code != cli.ExitSchema || !strings.Contains(out, "older") {
			t.Fatalf("exit %d: %s", code, out)
		}
		if n := count(t, p, `SELECT count(*) FROM sqlite_master WHERE name = 'jobs'`); n != 0 {
			t.Fatal("workerd migrated the database")
		}
	})
	t.Run("newer", func(t *testing.T) {
		p := storetest.MustMigrate(t)
		db, _ := store.OpenRaw(p)
		if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, TRUE)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if code, out := runMain(t, "run", "--db", storetest.WorkerDB(t, p)); code != cli.ExitSchema || !strings.Contains(out, "newer") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("missing library root", func(t *testing.T) {
		t.Setenv("BINDERY_TEST_EXECUTOR", "")
		dir := t.TempDir()
		for _, roots := range []string{dir + "/absent", dir + "," + dir + "/absent", "relative", ","} {
			code, out := runMain(t, "run", "--db", storetest.WorkerDB(t, storetest.MustMigrate(t)), "--state-dir", dir, "--library-root", roots)
			if code != cli.ExitUsage || !strings.Contains(out, "library root") {
				t.Fatalf("roots %q: exit %d: %s", roots, code, out)
			}
		}
	})
	t.Run("bad environment values", func(t *testing.T) {
		for env, v := range map[string]string{"BINDERY_LEASE": "30", "BINDERY_THUMBNAIL_CONCURRENCY": "many", "BINDERY_SHUTDOWN_GRACE": "soon"} {
			t.Setenv(env, v)
			code, out := runMain(t, "run", "--db", storetest.WorkerDB(t, storetest.MustMigrate(t)), "--state-dir", t.TempDir())
			if code != cli.ExitUsage || !strings.Contains(out, env+"=") {
				t.Fatalf("%s=%s: exit %d: %s", env, v, code, out)
			}
			t.Setenv(env, "")
		}
		t.Setenv("BINDERY_LEASE", "30")
		if code, out := runMain(t, "healthcheck", "--db", storetest.WorkerDB(t, storetest.MustMigrate(t))); code != cli.ExitUsage || !strings.Contains(out, "BINDERY_LEASE=") {
			t.Fatalf("healthcheck: exit %d: %s", code, out)
		}
	})
	t.Run("bad test executor", func(t *testing.T) {
		t.Setenv("BINDERY_TEST_EXECUTOR", "bogus")
		if code, out := runMain(t, "run", "--db", storetest.WorkerDB(t, storetest.MustMigrate(t)), "--state-dir", t.TempDir()); code != cli.ExitUsage {
			t.Fatalf("exit %d: %s", code, out)
		}
		if testExecutorsBuilt {
			return
		}
		// A release build (this test binary is one) has no test executors.
		t.Setenv("BINDERY_TEST_EXECUTOR", "noop")
		if code, out := runMain(t, "run", "--db", storetest.WorkerDB(t, storetest.MustMigrate(t)), "--state-dir", t.TempDir()); code != cli.ExitUsage ||
			!strings.Contains(out, "built without the test executors") {
			t.Fatalf("release build took the test executor: exit %d: %s", code, out)
		}
	})
}

func count(t *testing.T, path, q string, args ...any) int64 {
	t.Helper()
	db := thirdParty(t, path)
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// skipSQLiteFile skips a case that builds a broken SQLite file by hand.
func skipSQLiteFile(t *testing.T) {
	if storetest.Postgres() {
		t.Skip("SQLite-only: the case is a hand-made SQLite file")
	}
}

// thirdParty is a plain database/sql connection: what a script following
// docs/PROTOCOL.md would hold.
func thirdParty(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := store.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// insertID runs one INSERT as the third party and returns the new row's id
// (RETURNING id: database/sql's LastInsertId has no PostgreSQL form).
func insertID(t *testing.T, tp *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var id int64
	if err := tp.QueryRow(query+" RETURNING id", args...).Scan(&id); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return id
}

// proc is one real workerd process.
type proc struct {
	id     string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{} // closed when the process was reaped
	err    error         // its exit status, valid after done
}

func startWorker(t *testing.T, db, state, id, executor string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"run", "--db", storetest.WorkerDB(t, db), "--state-dir", state, "--worker-id", id,
		"--lease", "2s", "--thumbnail-concurrency", "2", "--shutdown-grace", "500ms"}, extra...)
	cmd := exec.Command(workerdBin, args...)
	cmd.Env = append(os.Environ(), "BINDERY_TEST_EXECUTOR="+executor)
	p := &proc{id: id, cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s stderr:\n%s", id, p.stderr)
		}
	})
	return p
}

// stop sends SIGTERM and requires a clean exit 0 within timeout.
func (p *proc) stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("%s exited with %v\n%s", p.id, p.err, p.stderr)
		}
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v after SIGTERM", p.id, timeout)
	}
}

func waitCount(t *testing.T, db *sql.DB, want int64, timeout time.Duration, q string, args ...any) {
	t.Helper()
	testutil.WaitForState(t, fmt.Sprintf("%s = %d", q, want), timeout, func() (bool, string) {
		var n int64
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n == want, fmt.Sprint(n)
	})
}

var tpNow = storetest.NowSQL()

// TestTwoWorkersAndAThirdParty runs two real workerd processes against one
// file while a third party enqueues 1,000 thumbnails and a series of
// scan/hash jobs with plain SQL; every row must complete exactly once.
func TestTwoWorkersAndAThirdParty(t *testing.T) {
	t.Parallel()
	path := storetest.MustMigrate(t)
	state := t.TempDir()
	tp := thirdParty(t, path)
	w1 := startWorker(t, path, state, "w1", "noop")
	w2 := startWorker(t, path, state, "w2", "noop")

	const thumbs, jobs = 1000, 6
	go func() {
		for i := range thumbs {
			tp.Exec(`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
				VALUES (?, 1, 'g', 'x.webp', `+tpNow+`, `+tpNow+`)`, i+1)
		}
	}()
	for i := range jobs {
		kind := []string{"scan", "hash"}[i%2]
		// The single-active index makes the insert fail while the previous
		// job is pending or running: a third party simply retries.
		for {
			_, err := tp.Exec(`INSERT INTO jobs (kind, created_at, updated_at) VALUES (?, `+tpNow+`, `+tpNow+`)`, kind)
			if err == nil {
				break
			}
			if !store.IsUnique(err) {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCount(t, tp, thumbs, 40*time.Second, `SELECT count(*) FROM thumbnails WHERE status = 'ready'`)
	waitCount(t, tp, jobs, 20*time.Second, `SELECT count(*) FROM jobs WHERE status = 'completed'`)
	w1.stop(t, 10*time.Second)
	w2.stop(t, 10*time.Second)

	runs := executions(t, state)
	for i := 1; i <= thumbs; i++ {
		if n := runs[fmt.Sprintf("thumbnail %d", i)]; n != 1 {
			t.Fatalf("thumbnail %d executed %d times", i, n)
		}
	}
	if n := len(runs); n != thumbs+jobs {
		t.Fatalf("%d distinct executions, want %d", n, thumbs+jobs)
	}
	var by1, by2 int64
	tp.QueryRow(`SELECT count(*) FILTER (WHERE worker_id = 'w1'), count(*) FILTER (WHERE worker_id = 'w2') FROM thumbnails`).Scan(&by1, &by2)
	t.Logf("thumbnails by w1=%d w2=%d", by1, by2)
	if by1+by2 != thumbs {
		t.Fatalf("worker_id of finished rows: w1=%d w2=%d", by1, by2)
	}
	if n := count(t, path, `SELECT count(*) FROM workers WHERE stopped_at IS NOT NULL`); n != 2 {
		t.Fatalf("%d workers marked stopped", n)
	}
}

// executions reads the noop executors' log: "<kind> <id>" → count.
func executions(t *testing.T, state string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(state, "test-executions.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out[sc.Text()]++
	}
	return out
}

// TestKilledWorker SIGKILLs a worker mid-job: after its lease expires a
// second worker recovers the job (lease_expired), controld's retry policy
// requeues it, and the second worker completes it.
func TestKilledWorker(t *testing.T) {
	t.Parallel()
	path := storetest.MustMigrate(t)
	state := t.TempDir()
	tp := thirdParty(t, path)
	a := startWorker(t, path, state, "a", "noop:1m")
	id := insertID(t, tp, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', `+tpNow+`, `+tpNow+`)`)
	waitCount(t, tp, 1, 10*time.Second, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'running' AND worker_id = 'a'`, id)
	a.cmd.Process.Kill()
	<-a.done

	b := startWorker(t, path, state, "b", "noop")
	waitCount(t, tp, 1, 10*time.Second, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'retryable' AND error_code = 'lease_expired' AND worker_id IS NULL`, id)
	control := storetest.MustOpen(t, path, store.RoleControl, nil)
	testutil.WaitFor(t, "the job requeued", 10*time.Second, func() bool {
		rq, _, err := leases.New(control).RequeueRetryableJobs(context.Background(), 5)
		if err != nil {
			t.Fatal(err)
		}
		return rq == 1
	})
	waitCount(t, tp, 1, 10*time.Second, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'completed' AND worker_id = 'b' AND attempt = 2`, id)

	t.Run("healthcheck", func(t *testing.T) {
		if code, out := runMain(t, "healthcheck", "--db", storetest.WorkerDB(t, path), "--worker-id", "b", "--lease", "2s"); code != 0 {
			t.Fatalf("live worker: exit %d %s", code, out)
		}
		if code, out := runMain(t, "healthcheck", "--db", storetest.WorkerDB(t, path), "--lease", "2s"); code != 0 {
			t.Fatalf("any worker: exit %d %s", code, out)
		}
		// a was killed: its row stops being refreshed and goes stale.
		waitHealth := func(args ...string) {
			deadline := time.Now().Add(10 * time.Second)
			for {
				code, out := runMain(t, append([]string{"healthcheck", "--db", storetest.WorkerDB(t, path), "--lease", "2s"}, args...)...)
				if code == cli.ExitFailure && strings.Contains(out, "unhealthy") {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("healthcheck %v: exit %d %s", args, code, out)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		waitHealth("--worker-id", "a")
		waitHealth("--worker-id", "nobody")
		b.stop(t, 10*time.Second)
		waitHealth("--worker-id", "b")
	})
}

// TestSIGTERMReleases stops a worker mid-job: after the grace period the
// job is handed back at once (retryable, worker_shutdown) and the process
// exits 0.
func TestSIGTERMReleases(t *testing.T) {
	t.Parallel()
	path := storetest.MustMigrate(t)
	tp := thirdParty(t, path)
	w := startWorker(t, path, t.TempDir(), "w", "noop:1m")
	id := insertID(t, tp, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('hash', `+tpNow+`, `+tpNow+`)`)
	th := insertID(t, tp, `INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (1, 1, 'g', 'x', `+tpNow+`, `+tpNow+`)`)
	waitCount(t, tp, 2, 10*time.Second, `SELECT (SELECT count(*) FROM jobs WHERE id = ? AND status = 'running')
		+ (SELECT count(*) FROM thumbnails WHERE id = ? AND status = 'running')`, id, th)
	w.stop(t, 5*time.Second)
	waitCount(t, tp, 1, time.Second, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'retryable' AND error_code = 'worker_shutdown'`, id)
	waitCount(t, tp, 1, time.Second, `SELECT count(*) FROM thumbnails WHERE id = ? AND status = 'pending' AND worker_id IS NULL`, th)
}

// TestMallocArenas: workerd links package arenas, so its glibc malloc
// arena limit is set as it starts (internal/arenas' own test counts the
// arenas); MALLOC_ARENA_MAX in the environment leaves it to glibc.
func TestMallocArenas(t *testing.T) {
	want := arenas.Default
	if _, set := os.LookupEnv("MALLOC_ARENA_MAX"); set || strings.Contains(os.Getenv("GLIBC_TUNABLES"), "arena_max") {
		want = 0
	}
	if got := arenas.Limit(); got != want && got != -1 {
		t.Fatalf("arenas.Limit() = %d, want %d", got, want)
	}
	code, out := runMain(t, "run", "--help")
	if code != 0 || !strings.Contains(out, "MALLOC_ARENA_MAX") {
		t.Fatalf("workerd run --help (exit %d) does not name MALLOC_ARENA_MAX:\n%s", code, out)
	}
}
