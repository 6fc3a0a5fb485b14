package thumbnails_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

func TestParseCleanupKey(t *testing.T) {
	good := map[string]thumbnails.CleanupKey{
		"library:1":   {Kind: "library", N: 1},
		"file:42":     {Kind: "file", N: 42},
		"shards:256":  {Kind: "shards", N: 256},
		"library:999": {Kind: "library", N: 999},
	}
	for key, want := range good {
		got, err := thumbnails.ParseCleanupKey(key)
		if err != nil || got != want || got.String() != key {
			t.Errorf("ParseCleanupKey(%q) = %+v, %v", key, got, err)
		}
	}
	for _, key := range []string{"", "library", "library:", "library:0", "library:-1", "library:01",
		"LIBRARY:1", "file:1x", "shards:+4", "series:1", "library:1:2", " file:1"} {
		if _, err := thumbnails.ParseCleanupKey(key); err == nil {
			t.Errorf("ParseCleanupKey(%q) accepted", key)
		}
	}
}

func TestEnqueueCleanup(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	at := db.clock.Now().Add(time.Hour)
	c, err := thumbnails.New(db.ctrl).EnqueueCleanup(ctx, "library:7", at)
	if err != nil {
		t.Fatal(err)
	}
	if c.GroupKey != "library:7" || c.Status != "pending" || c.ExecuteAfter.String() != protocol.FormatTime(at) {
		t.Fatalf("row %+v", c)
	}
	again, err := thumbnails.New(db.ctrl).EnqueueCleanup(ctx, "library:7", at.Add(time.Hour))
	if err != nil || again.ID != c.ID {
		t.Fatalf("second enqueue: %+v %v, want the pending row %d", again, err, c.ID)
	}
	if _, err := thumbnails.New(db.ctrl).EnqueueCleanup(ctx, "library:x", at); protocol.CodeOf(err, "") != protocol.ErrInvalidPayload {
		t.Fatalf("bad key: %v", err)
	}
}

// addThumb inserts a thumbnail row in the given state and layout.
func (db *coverDB) addThumb(t *testing.T, file, lib int64, status string, shards int64) int64 {
	t.Helper()
	id, err := storetest.InsertID(context.Background(), db.ctrl, `INSERT INTO thumbnails (file_id, library_id, group_key, status,
		output_relpath, created_at, updated_at) VALUES (?, ?, ?, ?, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`,
		file, lib, thumbnails.ThumbnailGroupKey(lib), status, thumbnails.CoverRelPath(file, shards, protocol.ImageWebP))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestScheduleMissingCleanups(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	old := db.addFile(t, db.lib, "old.cbz")
	recent := db.addFile(t, db.lib, "recent.cbz")
	bare := db.addFile(t, db.lib, "bare.cbz")
	present := db.addFile(t, db.lib, "present.cbz")
	for _, f := range []int64{old, recent, present} {
		db.addThumb(t, f, db.lib, "ready", 256)
	}
	now := db.clock.Now()
	db.exec(t, `UPDATE library_files SET is_missing = 1, missing_since = ? WHERE id IN (?, ?)`,
		protocol.FormatTime(now.Add(-200*time.Hour)), old, bare)
	db.exec(t, `UPDATE library_files SET is_missing = 1, missing_since = ? WHERE id = ?`,
		protocol.FormatTime(now.Add(-time.Hour)), recent)

	n, err := thumbnails.New(db.ctrl).ScheduleMissingCleanups(ctx, 168*time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("scheduled %d, %v; want 1", n, err)
	}
	if got := db.count(t, `SELECT count(*) FROM thumbnail_cleanup_jobs WHERE group_key = ? AND status = 'pending'
		AND execute_after = ?`, fmt.Sprintf("file:%d", old), protocol.FormatTime(now)); got != 1 {
		t.Fatal("no due file cleanup for the long-missing file")
	}
	if n, err := thumbnails.New(db.ctrl).ScheduleMissingCleanups(ctx, 168*time.Hour); err != nil || n != 0 {
		t.Fatalf("rescheduled %d, %v; want 0 while one is pending", n, err)
	}
	db.clock.Advance(200 * time.Hour)
	if n, err := thumbnails.New(db.ctrl).ScheduleMissingCleanups(ctx, 168*time.Hour); err != nil || n != 1 {
		t.Fatalf("later: %d, %v; want the recent file now", n, err)
	}
}

func TestCleanupCandidates(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	other := db.addLibrary(t, "/other")
	a := db.addFile(t, db.lib, "a.cbz")
	b := db.addFile(t, db.lib, "b.cbz")
	c := db.addFile(t, other, "c.cbz")
	aReady := db.addThumb(t, a, db.lib, "ready", 256)
	aFailed := db.addThumb(t, a, db.lib, "failed", 256)
	bPending := db.addThumb(t, b, db.lib, "pending", 256)
	bReady := db.addThumb(t, b, db.lib, "ready", 256)
	cReady := db.addThumb(t, c, other, "ready", 256)

	ids := func(key string, after int64, limit int) []int64 {
		t.Helper()
		rows, err := thumbnails.New(db.work).CleanupCandidates(ctx, key, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	eq := func(got []int64, want ...int64) bool { return fmt.Sprint(got) == fmt.Sprint(want) }

	if got := ids(thumbnails.ThumbnailGroupKey(db.lib), 0, 10); !eq(got, aReady, aFailed, bReady) {
		t.Fatalf("library group: %v", got)
	}
	if got := ids(thumbnails.ThumbnailGroupKey(db.lib), aReady, 1); !eq(got, aFailed) {
		t.Fatalf("paging: %v", got)
	}
	if got := ids(fmt.Sprintf("file:%d", a), 0, 10); !eq(got, aReady, aFailed) {
		t.Fatalf("file group: %v", got)
	}
	if got := ids(fmt.Sprintf("file:%d", c), 0, 10); !eq(got, cReady) {
		t.Fatalf("file group of c: %v", got)
	}
	if got := ids("shards:256", 0, 10); len(got) != 0 {
		t.Fatalf("shards of the current layout: %v", got)
	}
	if _, err := thumbnails.New(db.work).CleanupCandidates(ctx, "nope:1", 0, 10); err == nil {
		t.Fatal("bad key accepted")
	}

	t.Run("shards", func(t *testing.T) {
		// Layout changes to 16 shards. a: re-rendered (ready in the new
		// layout): its old rows go. b: not yet re-rendered: its old ready
		// row stays. A failed old row goes. A row of a deleted file goes.
		aNew := db.addThumb(t, a, db.lib, "ready", 16)
		gone := db.addThumb(t, 9999, db.lib, "ready", 256)
		db.exec(t, `UPDATE library_files SET needs_cover = 0`)
		n, err := thumbnails.New(db.ctrl).FlagStaleLayoutCovers(ctx, 16)
		if err != nil || n != 2 {
			t.Fatalf("flagged %d, %v; want b and c", n, err)
		}
		if db.count(t, `SELECT needs_cover FROM library_files WHERE id = ?`, a) != 0 {
			t.Fatal("a, already in the new layout, was flagged")
		}
		got := ids("shards:16", 0, 10)
		if !eq(got, aReady, aFailed, gone) {
			t.Fatalf("shards:16 candidates %v, want %v", got, []int64{aReady, aFailed, gone})
		}
		for _, id := range got {
			if id == aNew || id == bReady {
				t.Fatalf("shards:16 would delete row %d (new layout, or old cover not yet replaced)", id)
			}
		}
	})
	t.Run("paths in use and delete", func(t *testing.T) {
		rel := thumbnails.CoverRelPath(b, 256, protocol.ImageWebP)
		used, err := thumbnails.New(db.work).CoverPathsInUse(ctx, []string{rel, thumbnails.CoverRelPath(a, 256, protocol.ImageWebP)}, []int64{bReady})
		if err != nil {
			t.Fatal(err)
		}
		if !used[rel] {
			t.Fatal("b's cover is still used by its pending row")
		}
		// The worker deletes rows on the cleanup path, fenced by its claim
		// of a cleanup row; a pending row in the list is kept.
		db.exec(t, `INSERT INTO thumbnail_cleanup_jobs (id, group_key, status, worker_id, worker_heartbeat_at, lease_expires_at,
			lease_epoch, execute_after, created_at, updated_at) VALUES (77, 'library:1', 'running', 'w', ?, ?, 3, ?, ?, ?)`,
			protocol.FormatTime(time.Now()), protocol.FormatTime(time.Now().Add(time.Hour)),
			protocol.FormatTime(time.Now()), protocol.FormatTime(time.Now()), protocol.FormatTime(time.Now()))
		lease := model.Fence{Table: model.LeaseCleanup, ID: 77, WorkerID: "w", Epoch: 3}
		for _, lost := range []model.Fence{{Table: model.LeaseCleanup, ID: 77, WorkerID: "w", Epoch: 2},
			{Table: model.LeaseCleanup, ID: 77, WorkerID: "v", Epoch: 3}} {
			if n, err := thumbnails.New(db.work).DeleteCleanedThumbnails(ctx, lost, []int64{aReady}); !errors.Is(err, store.ErrLeaseLost) || n != 0 {
				t.Fatalf("delete under %s: %d, %v; want ErrLeaseLost", lost, n, err)
			}
		}
		n, err := thumbnails.New(db.work).DeleteCleanedThumbnails(ctx, lease, []int64{aReady, aFailed, bPending})
		if err != nil || n != 2 {
			t.Fatalf("deleted %d, %v; want 2", n, err)
		}
		if db.count(t, `SELECT count(*) FROM thumbnails WHERE id = ?`, bPending) != 1 {
			t.Fatal("pending row deleted")
		}
		if n, err := thumbnails.New(db.work).DeleteCleanedThumbnails(ctx, lease, []int64{aReady}); err != nil || n != 0 {
			t.Fatalf("second delete: %d, %v", n, err)
		}
	})
	if _, err := thumbnails.New(db.work).DeleteCleanedThumbnails(ctx, model.Fence{}, nil); err != nil {
		t.Fatal(err)
	}
}
