package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestChangeWatcher: the feed's watcher wakes on a commit of another
// process's connection (data_version on SQLite, NOTIFY on PostgreSQL), and
// only then.
func TestChangeWatcher(t *testing.T) {
	ctx := context.Background()
	control, _, _ := storetest.MustOpenDB(t)
	w, err := control.WatchChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if changed, err := w.Changed(ctx); err != nil || changed {
		t.Fatalf("before any write: changed=%v err=%v", changed, err)
	}
	if _, err := control.Exec(ctx, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', ?, ?)`,
		"2026-01-01 00:00:00.000", "2026-01-01 00:00:00.000"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForState(t, "the watcher sees the insert", 5*time.Second, func() (bool, string) {
		changed, err := w.Changed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return changed, "no change seen"
	})
	if changed, err := w.Changed(ctx); err != nil || changed {
		t.Fatalf("after the change was reported: changed=%v err=%v", changed, err)
	}
}
