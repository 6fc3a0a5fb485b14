package chaos

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
	"github.com/bindery-nas/bindery/internal/fixtures"
)

// holdEnv makes the test binary, re-executed, act as the external process
// of TestBusyStorm: it takes the database's write lock, writes, holds the
// lock for the given time and commits.
const holdEnv = "BINDERY_CHAOS_HOLD_DB"

func holdWriteLock(path string, hold time.Duration) error {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=30000&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO settings (key, value, updated_at) VALUES ('jobs.retention_hours', '48', '2026-01-01 00:00:00.000')
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`); err != nil {
		tx.Rollback()
		return err
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(hold)
	return tx.Commit()
}

// TestBusyStorm: while controld and workerd scan, hash and render, an
// external process holds the write lock for 10 s. Both daemons wait and
// recover: no crash, every row ends terminal, and the external write is
// not lost.
func TestBusyStorm(t *testing.T) {
	if path := os.Getenv(holdEnv); path != "" {
		if err := holdWriteLock(path, 10*time.Second); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("runs real daemons for about 30 s")
	}
	dir := t.TempDir()
	bin, root := filepath.Join(dir, "bin"), filepath.Join(dir, "libraries")
	// The build is not the test: on a cold cache, beside make test's other
	// compiles, it alone can take minutes.
	if err := Build(t.Context(), bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := fixtures.Library(filepath.Join(root, "comics"), fixtures.LibrarySpec{Files: 40, Broken: 2}); err != nil {
		t.Fatal(err)
	}
	c := runCluster(ctx, t, "busy", filepath.Join(dir, "busy"), bin, root)
	lib, err := c.setup(ctx, filepath.Join(root, "comics"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.requestScan(ctx, lib); err != nil {
		t.Fatal(err)
	}

	holder := exec.Command(os.Args[0], "-test.run=^TestBusyStorm$")
	holder.Env = append(os.Environ(), holdEnv+"="+c.db)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("lock holder did not lock: %q %v", buf, err)
	}
	// While the lock is held, the API still answers reads.
	if err := c.api(ctx, http.MethodGet, "/jobs", nil, nil); err != nil {
		t.Errorf("read during the storm: %v", err)
	}
	if err := holder.Wait(); err != nil {
		t.Fatalf("lock holder: %v", err)
	}
	t.Logf("write lock held externally for %v", time.Since(start).Round(time.Millisecond))

	ro, err := checks.OpenRO(c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var open, hashes, covers int
		err := ro.QueryRow(`SELECT
			(SELECT count(*) FROM jobs WHERE status NOT IN ('completed','failed','cancelled'))
			+ (SELECT count(*) FROM thumbnails WHERE status IN ('pending','running')),
			(SELECT count(*) FROM jobs WHERE kind = 'hash' AND status = 'completed'),
			(SELECT count(*) FROM thumbnails WHERE status = 'ready')`).Scan(&open, &hashes, &covers)
		if err == nil && open == 0 && hashes == 1 && covers > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("work did not drain after the storm (open %d, hashes %d, covers %d, err %v)", open, hashes, covers, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, d := range []*daemon{c.control(), c.worker("w")} {
		if !d.alive() {
			t.Fatalf("%s died during the storm: %v\n%s", d.name, d.exitErr(), d.tail(20))
		}
	}
	var v string
	if err := ro.QueryRow(`SELECT value FROM settings WHERE key = 'jobs.retention_hours'`).Scan(&v); err != nil || v != "48" {
		t.Fatalf("the external write was lost: %q %v", v, err)
	}
	var failed int
	ro.QueryRow(`SELECT count(*) FROM jobs WHERE status = 'failed'`).Scan(&failed)
	if failed != 0 {
		t.Fatalf("%d jobs failed during the storm", failed)
	}
	if err := c.stopAll(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("clean stop after the storm: %v", err)
	}
}
