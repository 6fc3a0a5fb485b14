package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// TestCrashingCover: the cover of file 1 kills workerd (SIGKILL) each time
// it is rendered (poisonCover).
func TestCrashingCover(t *testing.T) {
	t.Parallel()
	poisonCover(t, "crash-on-file:1", nil, func(p *proc) {
		if !strings.Contains(p.err.Error(), "killed") {
			t.Fatalf("%s ended with %v, not its SIGKILL", p.id, p.err)
		}
	})
}

// TestHangingCover is TestCrashingCover with a cover whose render never
// returns, deaf to its cancel (a render stuck in a C library): each time,
// workerd cancels it at thumbnail.render_timeout_seconds and, two leases
// later, exits 70 for its supervisor to restart it; recovery counts that as
// a crash, so the row fails render_crashed after MaxRecoveries, and every
// other cover is rendered.
func TestHangingCover(t *testing.T) {
	t.Parallel()
	setTimeout := func(tp *sql.DB) {
		if _, err := tp.Exec(`INSERT INTO settings (key, value, updated_at) VALUES ('thumbnail.render_timeout_seconds', '1', ` + tpNow + `)`); err != nil {
			t.Fatal(err)
		}
	}
	poisonCover(t, "hang-on-file:1", setTimeout, func(p *proc) {
		var exit *exec.ExitError
		if !errors.As(p.err, &exit) || exit.ExitCode() != cli.ExitStuck {
			t.Fatalf("%s ended with %v, want exit %d\n%s", p.id, p.err, cli.ExitStuck, p.stderr)
		}
		if !strings.Contains(p.stderr.String(), "work ran past its deadline") || !strings.Contains(p.stderr.String(), "stuck") {
			t.Fatalf("%s logged neither the deadline nor the stuck render:\n%s", p.id, p.stderr)
		}
	})
}

// poisonCover runs workerd with executor under a supervisor that restarts
// it, as systemd or compose would, over six covers of which file 1's ends
// the process each time it is rendered (each end checked by ended). The
// row fails with render_crashed after MaxRecoveries ends, every other cover
// is rendered, and workerd stays up. prepare, when set, runs on the
// database first.
func poisonCover(t *testing.T, executor string, prepare func(tp *sql.DB), ended func(p *proc)) {
	path := storetest.MustMigrate(t)
	state := t.TempDir()
	tp := thirdParty(t, path)
	if prepare != nil {
		prepare(tp)
	}
	const covers = 6
	for i := 1; i <= covers; i++ {
		if _, err := tp.Exec(`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
			VALUES (?, 1, 'g', 'x.webp', `+tpNow+`, `+tpNow+`)`, i); err != nil {
			t.Fatal(err)
		}
	}
	crashes := 0
	deadline := time.Now().Add(90 * time.Second)
	w := startWorker(t, path, state, "w0", executor)
	for {
		select {
		case <-w.done:
			ended(w)
			if crashes++; crashes > leases.MaxRecoveries {
				t.Fatalf("workerd ended %d times: the poison cover is claimed forever", crashes)
			}
			w = startWorker(t, path, state, fmt.Sprintf("w%d", crashes), executor)
			continue
		case <-time.After(200 * time.Millisecond):
		}
		var failed int64
		if err := tp.QueryRow(`SELECT count(*) FROM thumbnails WHERE file_id = 1 AND status = 'failed' AND error_code = ?`,
			protocol.ErrRenderCrashed).Scan(&failed); err != nil {
			t.Fatal(err)
		}
		if failed == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no render_crashed after %d crashes", crashes)
		}
	}
	if crashes != leases.MaxRecoveries {
		t.Fatalf("%d crashes, want %d", crashes, leases.MaxRecoveries)
	}
	waitCount(t, tp, covers-1, 10*time.Second, `SELECT count(*) FROM thumbnails WHERE file_id <> 1 AND status = 'ready' AND recovered_count <= 1`)
	select {
	case <-w.done:
		t.Fatalf("workerd died after the poison failed: %v", w.err)
	default:
	}
	w.stop(t, 5*time.Second)
}
