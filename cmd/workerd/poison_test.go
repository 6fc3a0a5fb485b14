package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// TestCrashingCover runs workerd under a supervisor that restarts it, as
// systemd or compose would, while the cover of file 1 kills the process
// each time it is rendered. The row fails with render_crashed after
// MaxRecoveries crashes, every other cover is rendered, and workerd stays
// up.
func TestCrashingCover(t *testing.T) {
	t.Parallel()
	path := storetest.MustMigrate(t)
	state := t.TempDir()
	tp := thirdParty(t, path)
	const covers = 6
	for i := 1; i <= covers; i++ {
		if _, err := tp.Exec(`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
			VALUES (?, 1, 'g', 'x.webp', `+tpNow+`, `+tpNow+`)`, i); err != nil {
			t.Fatal(err)
		}
	}
	crashes := 0
	deadline := time.Now().Add(60 * time.Second)
	w := startWorker(t, path, state, "w0", "crash-on-file:1")
	for {
		select {
		case <-w.done:
			if crashes++; crashes > leases.MaxRecoveries {
				t.Fatalf("workerd crashed %d times: the poison cover is claimed forever", crashes)
			}
			w = startWorker(t, path, state, fmt.Sprintf("w%d", crashes), "crash-on-file:1")
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
