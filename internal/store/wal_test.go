package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"

	_ "github.com/mattn/go-sqlite3"
)

// openReader holds a read transaction open on its own connection, pinning
// the WAL snapshot it started on, as a long API list query would.
func openReader(t *testing.T, path string) *sql.Tx {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM filler`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestEnqueueCheckpoint(t *testing.T) {
	if storetest.Postgres() {
		st := storetest.MustOpen(t, storetest.MustMigrate(t), store.RoleControl, nil)
		_, _, err := st.EnqueueCheckpoint(context.Background(), protocol.CheckpointPassive, "api", true, 0)
		if !errors.Is(err, store.ErrConflict) || protocol.CodeOf(err, "") != protocol.CodeNoWAL {
			t.Fatalf("a checkpoint on PostgreSQL: %v", err)
		}
		return
	}
	setup := func(t *testing.T) (*store.Store, *storetest.Clock) {
		path := storetest.MustMigrate(t)
		clock := storetest.NewClock()
		return storetest.MustOpen(t, path, store.RoleControl, clock.Now), clock
	}
	ctx := context.Background()
	t.Run("active row is returned instead of a duplicate", func(t *testing.T) {
		st, clock := setup(t)
		w, created, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointPassive, "api", false, 30*time.Second)
		if err != nil || !created || w.Status != "pending" || w.RequestedMode != "passive" || !w.ExecuteAfter.Equal(w.CreatedAt.Time) {
			t.Fatalf("first: %+v %v %v", w, created, err)
		}
		clock.Advance(time.Minute)
		again, created, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointTruncate, "api", true, 30*time.Second)
		if err != nil || created || again.ID != w.ID || again.RequestedMode != "truncate" {
			t.Fatalf("dup: %+v %v %v", again, created, err)
		}
		// weaker mode never downgrades
		again, _, _ = st.EnqueueCheckpoint(ctx, protocol.CheckpointPassive, "api", false, 0)
		if again.RequestedMode != "truncate" {
			t.Fatalf("downgraded to %s", again.RequestedMode)
		}
		for _, status := range []string{"running", "retryable"} {
			if _, err := storetest.Exec(ctx, st, `UPDATE wal_maintenance_jobs SET status = ?`, status); err != nil {
				t.Fatal(err)
			}
			got, created, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointRestart, "api", true, 0)
			if err != nil || created || got.ID != w.ID || got.RequestedMode != "truncate" {
				t.Fatalf("%s: %+v %v %v", status, got, created, err)
			}
		}
	})
	t.Run("min interval refuses unless forced", func(t *testing.T) {
		st, clock := setup(t)
		w, _, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointPassive, "api", false, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Exec(ctx, st, `UPDATE wal_maintenance_jobs SET status = 'completed' WHERE id = ?`, w.ID); err != nil {
			t.Fatal(err)
		}
		clock.Advance(10 * time.Second)
		if _, _, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointPassive, "api", false, 30*time.Second); !errors.Is(err, store.ErrQueueFull) {
			t.Fatalf("within min interval: %v", err)
		}
		forced, created, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointTruncate, "api", true, 30*time.Second)
		if err != nil || !created || forced.ID == w.ID {
			t.Fatalf("forced: %+v %v %v", forced, created, err)
		}
		if _, err := storetest.Exec(ctx, st, `UPDATE wal_maintenance_jobs SET status = 'failed' WHERE id = ?`, forced.ID); err != nil {
			t.Fatal(err)
		}
		clock.Advance(30 * time.Second)
		if _, created, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointPassive, "api", false, 30*time.Second); err != nil || !created {
			t.Fatalf("after min interval: %v %v", created, err)
		}
	})
	t.Run("bad mode", func(t *testing.T) {
		st, _ := setup(t)
		if _, _, err := st.EnqueueCheckpoint(ctx, "PASSIVE", "api", true, 0); !errors.Is(err, store.ErrInvalidRequest) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("latest and keyset list", func(t *testing.T) {
		st, clock := setup(t)
		if _, err := st.LatestCheckpoint(ctx); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("empty latest: %v", err)
		}
		var ids []int64
		for range 7 {
			w, _, err := st.EnqueueCheckpoint(ctx, protocol.CheckpointPassive, "t", true, 0)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, w.ID)
			if _, err := storetest.Exec(ctx, st, `UPDATE wal_maintenance_jobs SET status = 'completed' WHERE id = ?`, w.ID); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
		latest, err := st.LatestCheckpoint(ctx)
		if err != nil || latest.ID != ids[6] {
			t.Fatalf("latest %+v %v", latest, err)
		}
		var got []int64
		after := int64(0)
		for {
			page, err := st.ListCheckpoints(ctx, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range page {
				got = append(got, w.ID)
			}
			if len(page) < 3 {
				break
			}
			after = page[len(page)-1].ID
		}
		want := fmt.Sprint([]int64{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]})
		if fmt.Sprint(got) != want {
			t.Fatalf("pages %v, want %v", got, want)
		}
	})
}

// TestCheckpoint runs real checkpoints on a database with a WAL.
func TestCheckpoint(t *testing.T) {
	storetest.SkipOnPostgres(t, "WAL checkpoints are SQLite's")
	ctx := context.Background()
	setup := func(t *testing.T) (*store.Store, string) {
		path := storetest.MustMigrate(t)
		st := storetest.MustOpen(t, path, store.RoleControl, nil)
		if _, err := storetest.Exec(ctx, st, `CREATE TABLE filler (b BLOB)`); err != nil {
			t.Fatal(err)
		}
		return st, path
	}
	fill := func(t *testing.T, st *store.Store, n int) {
		for range n {
			if _, err := storetest.Exec(ctx, st, `INSERT INTO filler VALUES (randomblob(8192))`); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("passive checkpoints every frame", func(t *testing.T) {
		st, _ := setup(t)
		fill(t, st, 20)
		busy, log, done, err := st.Checkpoint(ctx, protocol.CheckpointPassive)
		if err != nil || busy != 0 || log < 20 || done != log {
			t.Fatalf("busy %d log %d done %d err %v", busy, log, done, err)
		}
	})
	t.Run("a reader makes truncate busy, then it completes", func(t *testing.T) {
		st, path := setup(t)
		fill(t, st, 10)
		tx := openReader(t, path)
		fill(t, st, 10) // frames the reader's snapshot does not see
		start := time.Now()
		busy, log, done, err := st.CheckpointTimeout(ctx, protocol.CheckpointTruncate, 200*time.Millisecond)
		if err != nil || busy != 1 || log <= 0 || done >= log {
			t.Fatalf("with reader: busy %d log %d done %d err %v", busy, log, done, err)
		}
		if waited := time.Since(start); waited < 150*time.Millisecond || waited > 5*time.Second {
			t.Fatalf("busy wait took %v, want about the 200ms busy timeout", waited)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		busy, log, done, err = st.CheckpointTimeout(ctx, protocol.CheckpointTruncate, 200*time.Millisecond)
		if err != nil || busy != 0 || log != 0 || done != 0 {
			t.Fatalf("after reader: busy %d log %d done %d err %v", busy, log, done, err)
		}
	})
}
