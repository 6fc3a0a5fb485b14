package feed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/feed"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestChangeWatcher: the feed's watcher wakes on a commit of another
// process's connection (data_version on SQLite, NOTIFY on PostgreSQL), and
// only then.
func TestChangeWatcher(t *testing.T) {
	ctx := context.Background()
	control, w := watchChanges(t)
	if changed, err := w.Changed(ctx); err != nil || changed {
		t.Fatalf("before any write: changed=%v err=%v", changed, err)
	}
	if _, err := storetest.Exec(ctx, control, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', ?, ?)`,
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

// TestChangeWatcherReconnects: on PostgreSQL, a LISTENing connection the
// server dropped (a restart, a network cut) is connected again, and the
// call that reconnects reports a change, since notifications were missed.
func TestChangeWatcherReconnects(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("PostgreSQL only: SQLite's watcher reads data_version on a local connection")
	}
	ctx := context.Background()
	control, w := watchChanges(t)
	if _, err := storetest.Exec(ctx, control, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForState(t, "the watcher reconnects and reports a change", 10*time.Second, func() (bool, string) {
		changed, err := w.Changed(ctx)
		return err == nil && changed, fmt.Sprintf("changed=%v err=%v", changed, err)
	})
	if _, err := storetest.Exec(ctx, control, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', ?, ?)`,
		"2026-01-01 00:00:00.000", "2026-01-01 00:00:00.000"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForState(t, "the reconnected watcher sees the insert", 5*time.Second, func() (bool, string) {
		changed, err := w.Changed(ctx)
		return err == nil && changed, fmt.Sprintf("changed=%v err=%v", changed, err)
	})
}

// watchChanges opens a fresh database as controld with a change watcher on
// it, closed when the test ends.
func watchChanges(t *testing.T) (*store.Store, *feed.ChangeWatcher) {
	t.Helper()
	control, _, _ := storetest.MustOpenDB(t)
	w, err := feed.New(control).WatchChanges(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return control, w
}
