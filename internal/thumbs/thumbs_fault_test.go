package thumbs

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// Disk-full faults (issue 11): the state folder is a small tmpfs that is
// filled to the last byte while the real engine renders covers.

// mountTmpfs mounts a tmpfs of size on dir, or skips the test.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "tmpfs mount needs root")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		testutil.SkipUnlessCI(t, "mount -t tmpfs not permitted here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

// fill writes a filler file until the file system reports ENOSPC, and
// returns a function that frees the space again.
func fill(t *testing.T, dir string) func() {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 16<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	f.Close()
	return func() { must(t, os.Remove(p)) }
}

// faultEnv is the thumbs env with the real engine running the renderer.
type faultEnv struct {
	*env
	db   string
	ro   *sql.DB
	stop func()
}

// view is a plain read-only connection to the database, for assertions.
func (e *faultEnv) view(t *testing.T) *sql.DB {
	t.Helper()
	if e.ro == nil {
		db, err := store.OpenReadOnly(e.ctrl.Path())
		must(t, err)
		t.Cleanup(func() { db.Close() })
		e.ro = db
	}
	return e.ro
}

// startEngine runs a real engine (one thumbnail lane) over e.work.
func (e *faultEnv) startEngine(t *testing.T) {
	t.Helper()
	eng, err := engine.New(e.work, engine.Executors{Thumbnail: e.r}, engine.Config{
		WorkerID: "fault-w", Lease: 2 * time.Second, ThumbnailConcurrency: 1, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	e.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	}
	t.Cleanup(func() {
		if e.stop != nil {
			e.stop()
		}
	})
}

// waitRow polls a thumbnail row until cond holds.
func (e *faultEnv) waitRow(t *testing.T, id int64, timeout time.Duration, cond func(status, code string) bool) (string, string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var status string
		var code sql.NullString
		row := e.view(t).QueryRow(`SELECT status, error_code FROM thumbnails WHERE id = ?`, id)
		if err := row.Scan(&status, &code); err != nil {
			t.Fatal(err)
		}
		if cond(status, code.String) {
			return status, code.String
		}
		if time.Now().After(deadline) {
			t.Fatalf("thumbnail %d still %s/%s after %v", id, status, code.String, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func coverBook(t *testing.T) []byte {
	t.Helper()
	pages, err := fixtures.Pages(2, fixtures.PageOptions{W: 600, H: 900})
	if err != nil {
		t.Fatal(err)
	}
	return mustZip(t, pages...)
}

// tempFiles lists leftovers of atomic writes under <state>/covers.
func tempFiles(state string) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(state, "covers"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".tmp") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestFaultCoverDiskFull: with the cover cache full, a render fails as
// io_error, the previous cover of the file stays intact and served, no
// temp file is left, and the same file renders once space returns.
func TestFaultCoverDiskFull(t *testing.T) {
	e := &faultEnv{env: setup(t)}
	mountTmpfs(t, e.state, "1m")
	file := e.put(t, "Full/book.cbz", coverBook(t))
	e.startEngine(t)

	first := e.admit(t, file, protocol.ImageWebP)
	e.waitRow(t, first.ID, 30*time.Second, func(s, _ string) bool { return s == "ready" })
	coverPath := filepath.Join(e.state, filepath.FromSlash(first.OutputRelpath))
	old, err := os.ReadFile(coverPath)
	if err != nil {
		t.Fatal(err)
	}

	free := fill(t, e.state)
	second := e.admit(t, file, protocol.ImageWebP)
	_, code := e.waitRow(t, second.ID, 30*time.Second, func(s, _ string) bool { return s == "failed" })
	if code != protocol.ErrIOError {
		t.Fatalf("render on a full disk failed with %q, want io_error", code)
	}
	if now, err := os.ReadFile(coverPath); err != nil || !bytes.Equal(now, old) {
		t.Fatalf("the previous cover changed on a failed write (%v)", err)
	}
	if tmp := tempFiles(e.state); len(tmp) > 0 {
		t.Fatalf("temp files left by the failed write: %v", tmp)
	}

	free()
	third := e.admit(t, file, protocol.ImageWebP)
	e.waitRow(t, third.ID, 30*time.Second, func(s, _ string) bool { return s == "ready" })
	if _, err := os.Stat(coverPath); err != nil {
		t.Fatalf("cover after space returned: %v", err)
	}
	if storetest.Postgres() {
		return // the integrity check below is of the SQLite file
	}
	var ok string
	if err := e.view(t).QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %s %v", ok, err)
	}
}

// TestFaultStateDiskFullWithDatabase puts the database in the full state
// folder too (the production layout). A worker that starts on a full disk
// cannot even register: it must stop with a clear error (its supervisor
// restarts it) and leave the database intact; one started after space
// returns renders the pending cover.
func TestFaultStateDiskFullWithDatabase(t *testing.T) {
	if storetest.Postgres() {
		t.Skip("SQLite-only: the database file itself sits on the full tmpfs")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	e := &faultEnv{env: &env{lib: filepath.Join(base, "library"), state: filepath.Join(base, "state")}}
	for _, d := range []string{e.lib, e.state} {
		must(t, os.MkdirAll(d, 0o755))
	}
	mountTmpfs(t, e.state, "4m")
	e.db = filepath.Join(e.state, "bindery.db")
	must(t, store.Migrate(context.Background(), e.db))
	e.ctrl = storetest.MustOpen(t, e.db, store.RoleControl, nil)
	e.work = storetest.MustOpen(t, e.db, store.RoleWorker, nil)
	e.libID = testfactory.Library(t, e.ctrl, &testfactory.LibraryOpts{Name: "lib", Path: e.lib})
	e.r = NewRenderer(e.work, Config{StateDir: e.state, LibraryRoots: pathsafe.Roots{base}})
	file := e.put(t, "Full/book.cbz", coverBook(t))
	row := e.admit(t, file, protocol.ImageWebP)

	free := fill(t, e.state)
	eng, err := engine.New(e.work, engine.Executors{Thumbnail: e.r}, engine.Config{
		WorkerID: "full-w", Lease: 2 * time.Second, ThumbnailConcurrency: 1, ShutdownGrace: time.Second})
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	runErr := eng.Run(ctx)
	cancel()
	if runErr == nil || !strings.Contains(runErr.Error(), "full") {
		t.Fatalf("engine on a full disk: %v, want a clear disk-full error", runErr)
	}
	t.Logf("engine on a full disk stopped with: %v", runErr)
	var status string
	must(t, e.view(t).QueryRow(`SELECT status FROM thumbnails WHERE id = ?`, row.ID).Scan(&status))
	if status != "pending" {
		t.Fatalf("row %s after the failed start, want pending", status)
	}

	free()
	e.startEngine(t)
	e.waitRow(t, row.ID, 30*time.Second, func(s, _ string) bool { return s == "ready" })
	e.stop()
	e.stop = nil
	var ok string
	if err := e.view(t).QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %s %v", ok, err)
	}
	if tmp := tempFiles(e.state); len(tmp) > 0 {
		t.Fatalf("temp files left: %v", tmp)
	}
}
