package thumbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

func (e *env) count(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	n, err := storetest.QueryInt(context.Background(), e.ctrl, q, args...)
	must(t, err)
	return n
}

// cleanup makes a live claim of a new cleanup row of group, as the
// engine's claim would (running, a lease an hour long, epoch 1), so that
// the cleaner's fenced writes pass.
func (e *env) cleanup(t *testing.T, group string) model.CleanupJob {
	t.Helper()
	now := time.Now()
	id, err := storetest.InsertID(context.Background(), e.ctrl, `INSERT INTO thumbnail_cleanup_jobs (group_key, status, worker_id,
		worker_heartbeat_at, lease_expires_at, lease_epoch, execute_after, created_at, updated_at)
		VALUES (?1, 'running', 'test', ?2, ?3, 1, ?2, ?2, ?2) RETURNING id`,
		group, protocol.FormatTime(now), protocol.FormatTime(now.Add(time.Hour)))
	must(t, err)
	c := model.CleanupJob{ID: id, GroupKey: group, Status: protocol.CleanupRunning}
	c.WorkerID, c.LeaseEpoch = new("test"), 1
	return c
}

// TestCleanAfterLeaseLost: a cleaner whose claim is no longer the row's
// live lease (it froze past the lease, the row was recovered and claimed
// again) removes no cover file and deletes no row.
func TestCleanAfterLeaseLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	cl := NewCleaner(e.work, Config{StateDir: e.state})
	book := e.put(t, "b.jpg", mustJPEG(t, 400, 600, 1))
	th := e.claim(t, book, protocol.ImageWebP)
	if _, err := e.r.RenderRow(ctx, th); err != nil {
		t.Fatal(err)
	}
	_, err := storetest.Exec(ctx, e.ctrl, `UPDATE thumbnails SET status = 'ready' WHERE id = ?`, th.ID)
	must(t, err)
	cover := filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath))
	job := e.cleanup(t, fmt.Sprintf("file:%d", book))
	_, err = storetest.Exec(ctx, e.ctrl, `UPDATE thumbnail_cleanup_jobs SET lease_epoch = 2, worker_id = 'other' WHERE id = ?`, job.ID)
	must(t, err)
	files, rows, err := cl.Clean(ctx, job)
	if !errors.Is(err, store.ErrLeaseLost) || files != 0 || rows != 0 {
		t.Fatalf("clean under a lost lease: %d files %d rows, %v; want ErrLeaseLost and nothing", files, rows, err)
	}
	if !exists(cover) || e.count(t, `SELECT count(*) FROM thumbnails WHERE id = ?`, th.ID) != 1 {
		t.Fatal("a cleaner that lost its lease removed the cover or its row")
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestClean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	cl := NewCleaner(e.work, Config{StateDir: e.state})
	jpg := mustJPEG(t, 400, 600, 1)

	// Three rendered books and one still pending.
	var books []int64
	for i := range 4 {
		books = append(books, e.put(t, fmt.Sprintf("b%d.jpg", i), jpg))
	}
	var covers []string
	for _, id := range books[:3] {
		th := e.claim(t, id, protocol.ImageWebP)
		if _, err := e.r.RenderRow(ctx, th); err != nil {
			t.Fatal(err)
		}
		_, err := storetest.Exec(ctx, e.ctrl, `UPDATE thumbnails SET status = 'ready' WHERE id = ?`, th.ID)
		must(t, err)
		covers = append(covers, filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath)))
	}
	pending, _, err := thumbnails.New(e.ctrl).RegenerateThumbnail(ctx, books[3], protocol.ImageWebP, 1000, 256)
	must(t, err)
	pendingCover := filepath.Join(e.state, filepath.FromSlash(pending.OutputRelpath))
	must(t, os.MkdirAll(filepath.Dir(pendingCover), 0o755))
	must(t, os.WriteFile(pendingCover, []byte("an older cover of book 3"), 0o644))

	t.Run("file group", func(t *testing.T) {
		files, rows, err := cl.Clean(ctx, e.cleanup(t, fmt.Sprintf("file:%d", books[0])))
		if err != nil || files != 1 || rows != 1 {
			t.Fatalf("clean file: %d files %d rows %v", files, rows, err)
		}
		if exists(covers[0]) || !exists(covers[1]) {
			t.Fatal("wrong cover deleted")
		}
		files, rows, err = cl.Clean(ctx, e.cleanup(t, fmt.Sprintf("file:%d", books[0])))
		if err != nil || files != 0 || rows != 0 {
			t.Fatalf("second run: %d files %d rows %v; want an idempotent no-op", files, rows, err)
		}
	})
	t.Run("library group spares active rows, their files and the library", func(t *testing.T) {
		// A row whose path leaves the cache, and a cover that is a symlink
		// to a library file: neither target may be touched.
		_, err := storetest.Exec(ctx, e.ctrl, `INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath,
			created_at, updated_at) VALUES (777, ?, ?, 'failed', '../library/b1.jpg', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
			e.libID, thumbnails.ThumbnailGroupKey(e.libID))
		must(t, err)
		must(t, os.Remove(covers[2]))
		must(t, os.Symlink(filepath.Join(e.lib, "b2.jpg"), covers[2]))
		// A crash between file and row deletion: the file is already gone.
		must(t, os.Remove(covers[1]))

		files, rows, err := cl.Clean(ctx, e.cleanup(t, thumbnails.ThumbnailGroupKey(e.libID)))
		if err != nil {
			t.Fatal(err)
		}
		if files != 1 || rows != 3 {
			t.Fatalf("deleted %d files %d rows, want 1 (the link) and 3", files, rows)
		}
		if exists(covers[2]) {
			t.Fatal("symlinked cover kept")
		}
		for i := range 4 {
			if !exists(filepath.Join(e.lib, fmt.Sprintf("b%d.jpg", i))) {
				t.Fatalf("library file b%d.jpg touched", i)
			}
		}
		if e.count(t, `SELECT count(*) FROM thumbnails WHERE id = ? AND status = 'pending'`, pending.ID) != 1 {
			t.Fatal("pending row deleted")
		}
		if !exists(pendingCover) {
			t.Fatal("cover of a pending row deleted")
		}
		if e.count(t, `SELECT count(*) FROM thumbnails`) != 1 {
			t.Fatal("finished rows left")
		}
	})
	t.Run("shards group", func(t *testing.T) {
		// Book 3 rendered in a 256-shard layout, then in 16 shards.
		_, err := storetest.Exec(ctx, e.ctrl, `UPDATE thumbnails SET status = 'ready' WHERE id = ?`, pending.ID)
		must(t, err)
		th, _, err := thumbnails.New(e.ctrl).RegenerateThumbnail(ctx, books[3], protocol.ImageWebP, 100, 16)
		must(t, err)
		th = claimed(t, e.ctrl, th)
		if _, err := e.r.RenderRow(ctx, th); err != nil {
			t.Fatal(err)
		}
		newCover := filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath))
		if newCover == pendingCover {
			t.Skip("layouts coincide for this id")
		}
		// Not yet ready in the new layout: the old cover stays.
		if _, rows, err := cl.Clean(ctx, e.cleanup(t, "shards:16")); err != nil || rows != 0 || !exists(pendingCover) {
			t.Fatalf("cleaned %d rows before the new cover was ready (%v)", rows, err)
		}
		_, err = storetest.Exec(ctx, e.ctrl, `UPDATE thumbnails SET status = 'ready' WHERE id = ?`, th.ID)
		must(t, err)
		files, rows, err := cl.Clean(ctx, e.cleanup(t, "shards:16"))
		if err != nil || files != 1 || rows != 1 {
			t.Fatalf("shards: %d files %d rows %v", files, rows, err)
		}
		if exists(pendingCover) || !exists(newCover) {
			t.Fatal("shards cleanup deleted the wrong layout")
		}
	})
	t.Run("bad key", func(t *testing.T) {
		if _, _, err := cl.Clean(ctx, e.cleanup(t, "everything")); protocol.CodeOf(err, "") != protocol.ErrInvalidPayload {
			t.Fatalf("%v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
		defer cancel()
		<-cctx.Done()
		if _, _, err := cl.Clean(cctx, e.cleanup(t, "library:1")); err == nil {
			t.Fatal("cancelled clean returned nil")
		}
	})
}
