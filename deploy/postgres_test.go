package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/pgtest"
)

// TestDaemonsOnPostgres runs both daemons on PostgreSQL, as a user past
// one host would: `controld migrate --worker-role` makes the schema and
// workerd's role, controld serves as the schema's owner, two workerd
// processes connect as the worker role, and the scan of
// TestDaemonsRunAsUnits (files, series, the broken file's error, covers,
// the duplicate the hash job finds, a cover cache rebuilt) goes through
// them. workerd given the owner's role is refused before it claims
// anything.
func TestDaemonsOnPostgres(t *testing.T) {
	bin := binDir(t)
	ctx := context.Background()
	srv := pgtest.Shared(t)
	db := pgtest.NewDatabase(t)
	role := fmt.Sprintf("workerd_%d", os.Getpid())
	t.Cleanup(func() {
		_ = srv.Exec(ctx, db, "DROP OWNED BY "+role)
		_ = srv.Exec(ctx, "postgres", "DROP ROLE IF EXISTS "+role)
	})
	ownerURL, workerURL := srv.URL(db, pgtest.Superuser), srv.URL(db, role)

	root := t.TempDir()
	state, library := filepath.Join(root, "state"), filepath.Join(root, "library")
	for _, dir := range []string{state, library} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	base := append(cleanEnv(), "PATH="+bin+":"+os.Getenv("PATH"), "BINDERY_STATE_DIR="+state,
		"BINDERY_LIBRARY_ROOT="+library, "BINDERY_LISTEN="+addr)
	owner := append(base[:len(base):len(base)], "BINDERY_DB="+ownerURL)

	out, code := runEnv(t, owner, filepath.Join(bin, "controld"), "migrate", "--worker-role", role)
	if code != 0 || !strings.Contains(out, "worker role "+role+" holds workerd's grants") {
		t.Fatalf("controld migrate --worker-role: exit %d\n%s", code, out)
	}
	out, code = runEnv(t, owner, filepath.Join(bin, "workerd"), "run")
	if code != 2 || !strings.Contains(out, "worker role too powerful") {
		t.Fatalf("workerd on the owner's role: exit %d, want 2 naming the role\n%s", code, out)
	}

	ctl := startProcess(t, owner, filepath.Join(bin, "controld"), "serve")
	waitHealthy(t, ctl, owner, "controld")
	var workers []*daemon
	for _, id := range []string{"pg-worker-1", "pg-worker-2"} {
		env := append(base[:len(base):len(base)], "BINDERY_DB="+workerURL, "BINDERY_WORKER_ID="+id)
		w := startProcess(t, env, filepath.Join(bin, "workerd"), "run")
		waitHealthy(t, w, env, "workerd")
		workers = append(workers, w)
	}

	scanThroughAPI(t, addr, state, library)

	for _, w := range workers {
		w.stop(t, 30*time.Second)
	}
	ctl.stop(t, 30*time.Second)
}

// startProcess starts a daemon with exactly env; it is killed when the
// test ends if it still runs.
func startProcess(t *testing.T, env []string, name string, args ...string) *daemon {
	t.Helper()
	d := &daemon{cmd: exec.Command(name, args...), out: &bytes.Buffer{}, done: make(chan error, 1)}
	d.cmd.Env = env
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), d.out)
		}
	})
	return d
}
