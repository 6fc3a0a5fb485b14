package thumbnails_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// coverDB is a migrated database with one library at /lib and a clock.
type coverDB struct {
	ctrl, work *store.Store
	path       string
	clock      *storetest.Clock
	lib        int64
}

func setupCovers(t *testing.T) *coverDB {
	t.Helper()
	c := storetest.MustOpenClockedDB(t)
	db := &coverDB{ctrl: c.Control, work: c.Worker, path: c.Path, clock: c.Clock}
	db.lib = db.addLibrary(t, "/lib")
	return db
}

func (db *coverDB) addLibrary(t *testing.T, path string) int64 {
	t.Helper()
	return testfactory.Library(t, db.ctrl, &testfactory.LibraryOpts{Path: path})
}

// addFile inserts a present file of lib flagged needs_cover.
func (db *coverDB) addFile(t *testing.T, lib int64, rel string) int64 {
	t.Helper()
	id, err := storetest.InsertID(context.Background(), db.ctrl, `INSERT INTO library_files (library_id, relative_path, size_bytes,
		mtime_ns, format, needs_cover, created_at, updated_at) VALUES (?, ?, 1, 1, 'zip', 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`, lib, rel)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (db *coverDB) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := storetest.Exec(context.Background(), db.ctrl, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (db *coverDB) count(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	n, err := storetest.QueryInt(context.Background(), db.ctrl, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestCoverRelPath(t *testing.T) {
	cases := []struct {
		id, shards int64
		format     protocol.ImageFormat
		want       string
	}{
		{5, 256, protocol.ImageWebP, "covers/005/5.webp"},
		{261, 256, protocol.ImageJPEG, "covers/005/261.jpg"},
		{255, 256, protocol.ImageWebP, "covers/255/255.webp"},
		{7, 1, protocol.ImageWebP, "covers/0/7.webp"},
		{123456, 65536, protocol.ImageWebP, "covers/57920/123456.webp"},
		{12, 10, protocol.ImageWebP, "covers/2/12.webp"},
		{12, 11, protocol.ImageWebP, "covers/01/12.webp"},
	}
	for _, c := range cases {
		if got := thumbnails.CoverRelPath(c.id, c.shards, c.format); got != c.want {
			t.Errorf("CoverRelPath(%d, %d, %s) = %q, want %q", c.id, c.shards, c.format, got, c.want)
		}
	}
}

func TestAdmitThumbnail(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	f1 := db.addFile(t, db.lib, "a.cbz")
	f2 := db.addFile(t, db.lib, "b.cbz")

	t.Run("creates one row and dedups", func(t *testing.T) {
		th, created, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f1, protocol.ImageWebP, 10, 256)
		if err != nil || !created {
			t.Fatalf("admit: %v created=%v", err, created)
		}
		want := model.Thumbnail{FileID: f1, LibraryID: db.lib, GroupKey: fmt.Sprintf("library:%d", db.lib),
			Status: "pending", Format: "webp", MediaType: "image", OutputRelpath: thumbnails.CoverRelPath(f1, 256, protocol.ImageWebP)}
		if th.FileID != want.FileID || th.LibraryID != want.LibraryID || th.GroupKey != want.GroupKey ||
			th.Status != want.Status || th.Format != want.Format || th.MediaType != want.MediaType ||
			th.OutputRelpath != want.OutputRelpath || th.CreatedAt.String() != protocol.FormatTime(db.clock.Now()) {
			t.Fatalf("row %+v", th)
		}
		again, created, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f1, protocol.ImageWebP, 10, 256)
		if err != nil || created || again.ID != th.ID {
			t.Fatalf("second admit: id %d created=%v err=%v, want the existing row %d", again.ID, created, err, th.ID)
		}
		regen, created, err := thumbnails.New(db.ctrl).RegenerateThumbnail(ctx, f1, protocol.ImageWebP, 10, 256)
		if err != nil || created || regen.ID != th.ID {
			t.Fatalf("regenerate while pending: id %d created=%v err=%v", regen.ID, created, err)
		}
		// Another format is another cover.
		if _, created, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f1, protocol.ImageJPEG, 10, 256); err != nil || !created {
			t.Fatalf("jpeg admit: %v created=%v", err, created)
		}
		db.exec(t, `UPDATE thumbnails SET status = 'failed' WHERE format = 'jpeg'`) // only settled rows may go
		db.exec(t, `DELETE FROM thumbnails WHERE format = 'jpeg'`)
	})
	t.Run("ready row is returned, regenerate makes a new one", func(t *testing.T) {
		db.exec(t, `UPDATE thumbnails SET status = 'ready' WHERE file_id = ?`, f1)
		th, created, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f1, protocol.ImageWebP, 10, 256)
		if err != nil || created || th.Status != "ready" {
			t.Fatalf("admit over ready: %+v created=%v err=%v", th, created, err)
		}
		regen, created, err := thumbnails.New(db.ctrl).RegenerateThumbnail(ctx, f1, protocol.ImageWebP, 10, 256)
		if err != nil || !created || regen.ID == th.ID || regen.Status != "pending" {
			t.Fatalf("regenerate over ready: %+v created=%v err=%v", regen, created, err)
		}
		if n := db.count(t, `SELECT count(*) FROM thumbnails WHERE file_id = ? AND status = 'ready'`, f1); n != 1 {
			t.Fatalf("%d ready rows, want the old cover kept while the new one renders", n)
		}
	})
	t.Run("superseded rows are pruned", func(t *testing.T) {
		// f1 now: ready (old) + pending (new). Finish the new one ready, add
		// a failed one, then regenerate: only the newest ready survives.
		db.exec(t, `UPDATE thumbnails SET status = 'ready' WHERE file_id = ? AND status = 'pending'`, f1)
		db.exec(t, `INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, created_at, updated_at)
			VALUES (?, ?, 'library:1', 'failed', ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`, f1, db.lib, thumbnails.CoverRelPath(f1, 256, protocol.ImageWebP))
		newest := db.count(t, `SELECT max(id) FROM thumbnails WHERE file_id = ? AND status = 'ready'`, f1)
		regen, created, err := thumbnails.New(db.ctrl).RegenerateThumbnail(ctx, f1, protocol.ImageWebP, 10, 256)
		if err != nil || !created {
			t.Fatalf("regenerate: %v", err)
		}
		left := db.count(t, `SELECT count(*) FROM thumbnails WHERE file_id = ?`, f1)
		kept := db.count(t, `SELECT count(*) FROM thumbnails WHERE file_id = ? AND id IN (?, ?)`, f1, newest, regen.ID)
		if left != 2 || kept != 2 {
			t.Fatalf("rows left: want only ready %d and pending %d", newest, regen.ID)
		}
	})
	t.Run("unknown or missing file", func(t *testing.T) {
		if _, _, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, 9999, protocol.ImageWebP, 10, 256); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown file: %v", err)
		}
		db.exec(t, `UPDATE library_files SET is_missing = 1 WHERE id = ?`, f2)
		if _, _, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f2, protocol.ImageWebP, 10, 256); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing file: %v", err)
		}
		db.exec(t, `UPDATE library_files SET is_missing = 0 WHERE id = ?`, f2)
		if _, _, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f2, "png", 10, 256); err == nil {
			t.Fatal("format png admitted")
		}
	})
	t.Run("queue full", func(t *testing.T) {
		active := db.count(t, `SELECT count(*) FROM thumbnails WHERE status IN ('pending','running')`)
		if _, _, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f2, protocol.ImageWebP, active, 256); !errors.Is(err, store.ErrQueueFull) {
			t.Fatalf("at capacity: %v, want ErrQueueFull", err)
		}
		if _, created, err := thumbnails.New(db.ctrl).AdmitThumbnail(ctx, f2, protocol.ImageWebP, active+1, 256); err != nil || !created {
			t.Fatalf("under capacity: %v", err)
		}
	})
}

// TestAdmitThumbnailCapacityRace: 50 processes' worth of connections admit
// 50 different files at once against capacity 10: exactly 10 rows.
func TestAdmitThumbnailCapacityRace(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	const n, capacity = 50, 10
	files := make([]int64, n)
	for i := range files {
		files[i] = db.addFile(t, db.lib, fmt.Sprintf("%02d.cbz", i))
	}
	stores := make([]*store.Store, n)
	for i := range stores {
		stores[i] = storetest.MustOpen(t, db.path, store.RoleControl, nil)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, full := 0, 0
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, created, err := thumbnails.New(stores[i]).AdmitThumbnail(ctx, files[i], protocol.ImageWebP, capacity, 256)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && created:
				admitted++
			case errors.Is(err, store.ErrQueueFull):
				full++
			default:
				t.Errorf("admit file %d: created=%v err=%v", files[i], created, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if admitted != capacity || full != n-capacity {
		t.Fatalf("admitted %d, refused %d; want %d and %d", admitted, full, capacity, n-capacity)
	}
	if got := db.count(t, `SELECT count(*) FROM thumbnails WHERE status = 'pending'`); got != capacity {
		t.Fatalf("%d pending rows, want %d", got, capacity)
	}
}

func TestAdmitPendingCovers(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	other := db.addLibrary(t, "/other")
	var files []int64
	for i := range 12 {
		files = append(files, db.addFile(t, db.lib, fmt.Sprintf("%02d.cbz", i)))
	}
	db.addFile(t, other, "x.cbz")
	missing := db.addFile(t, db.lib, "gone.cbz")
	db.exec(t, `UPDATE library_files SET is_missing = 1 WHERE id = ?`, missing)
	done := db.addFile(t, db.lib, "done.cbz")
	db.exec(t, `UPDATE library_files SET needs_cover = 0 WHERE id = ?`, done)

	t.Run("batches bounded by limit and capacity", func(t *testing.T) {
		n, err := thumbnails.New(db.ctrl).AdmitPendingCovers(ctx, db.lib, 5, 100, 7, protocol.ImageWebP)
		if err != nil || n != 5 {
			t.Fatalf("first batch: %d, %v; want 5", n, err)
		}
		n, err = thumbnails.New(db.ctrl).AdmitPendingCovers(ctx, db.lib, 100, 8, 7, protocol.ImageWebP)
		if err != nil || n != 3 {
			t.Fatalf("capacity-bound batch: %d, %v; want 3 (8 - 5 active)", n, err)
		}
		if _, err := thumbnails.New(db.ctrl).AdmitPendingCovers(ctx, db.lib, 100, 8, 7, protocol.ImageWebP); !errors.Is(err, store.ErrQueueFull) {
			t.Fatalf("full queue with flagged files: %v, want ErrQueueFull", err)
		}
		n, err = thumbnails.New(db.ctrl).AdmitPendingCovers(ctx, db.lib, 100, 100, 7, protocol.ImageWebP)
		if err != nil || n != 4 {
			t.Fatalf("rest: %d, %v; want 4", n, err)
		}
		n, err = thumbnails.New(db.ctrl).AdmitPendingCovers(ctx, db.lib, 100, 100, 7, protocol.ImageWebP)
		if err != nil || n != 0 {
			t.Fatalf("drained: %d, %v", n, err)
		}
	})
	t.Run("flags and layout", func(t *testing.T) {
		if got := db.count(t, `SELECT count(*) FROM library_files WHERE library_id = ? AND needs_cover = 1`, db.lib); got != 1 {
			t.Fatalf("%d files still flagged, want only the missing one", got)
		}
		if got := db.count(t, `SELECT count(*) FROM library_files WHERE library_id = ? AND needs_cover = 1`, other); got != 1 {
			t.Fatal("another library's file was touched")
		}
		for _, f := range files {
			want := thumbnails.CoverRelPath(f, 7, protocol.ImageWebP)
			if db.count(t, `SELECT count(*) FROM thumbnails WHERE file_id = ? AND output_relpath = ?`, f, want) != 1 {
				t.Fatalf("file %d: SQL layout differs from Go layout %q", f, want)
			}
		}
		if got := db.count(t, `SELECT count(*) FROM thumbnails WHERE file_id IN (?, ?)`, missing, done); got != 0 {
			t.Fatal("missing or unflagged file admitted")
		}
	})
	t.Run("changed file with a ready cover is re-admitted; running keeps its flag", func(t *testing.T) {
		db.exec(t, `UPDATE thumbnails SET status = 'ready' WHERE file_id = ?`, files[0])
		db.exec(t, `UPDATE thumbnails SET status = 'running' WHERE file_id = ?`, files[1])
		db.exec(t, `UPDATE library_files SET needs_cover = 1 WHERE id IN (?, ?)`, files[0], files[1])
		n, err := thumbnails.New(db.ctrl).AdmitPendingCovers(ctx, db.lib, 100, 100, 7, protocol.ImageWebP)
		if err != nil || n != 1 {
			t.Fatalf("re-admit: %d, %v; want 1", n, err)
		}
		if got := db.count(t, `SELECT needs_cover FROM library_files WHERE id = ?`, files[1]); got != 1 {
			t.Fatal("file with a running render lost its flag")
		}
		if got := db.count(t, `SELECT needs_cover FROM library_files WHERE id = ?`, files[0]); got != 0 {
			t.Fatal("re-admitted file still flagged")
		}
	})
}

func TestCoverSourceAndVersion(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	f := db.addFile(t, db.lib, "sub/a.cbz")
	db.exec(t, `INSERT INTO file_metadata (file_id, source, front_cover_page, updated_at) VALUES (?, 'comicinfo', 2, '2026-01-01 00:00:00.000')`, f)
	src, err := thumbnails.New(db.work).CoverSource(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if src.LibraryPath != "/lib" || src.RelativePath != "sub/a.cbz" || src.FrontCoverPage == nil ||
		model.Deref(src.FrontCoverPage) != 2 || src.IsMissing || src.LibraryID != db.lib {
		t.Fatalf("source %+v", src)
	}
	if _, err := thumbnails.New(db.work).CoverSource(ctx, 999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown file: %v", err)
	}
	// The worker role may write cover_updated_at (data-plane table), under
	// the claim of a render; two renders in the same second still give two
	// versions.
	if _, err := storetest.InsertID(ctx, db.ctrl, `INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (?1, ?2, 'g', 'x.webp', ?3, ?3) RETURNING id`, f, db.lib, protocol.FormatTime(db.clock.Now())); err != nil {
		t.Fatal(err)
	}
	th, err := leases.New(db.work).ClaimThumbnail(ctx, "w", 2*time.Hour)
	if err != nil || th == nil {
		t.Fatalf("claim %+v %v", th, err)
	}
	fence := th.Fence()
	v1, err := thumbnails.New(db.work).MarkCoverRendered(ctx, fence, f)
	if err != nil || v1 != db.clock.Now().Unix() {
		t.Fatalf("first version %d, %v; want %d", v1, err, db.clock.Now().Unix())
	}
	v2, err := thumbnails.New(db.work).MarkCoverRendered(ctx, fence, f)
	if err != nil || v2 != v1+1 {
		t.Fatalf("second version %d, %v; want %d", v2, err, v1+1)
	}
	db.clock.Advance(time.Hour)
	v3, err := thumbnails.New(db.work).MarkCoverRendered(ctx, fence, f)
	if err != nil || v3 != db.clock.Now().Unix() {
		t.Fatalf("later version %d, %v", v3, err)
	}
	if got, _ := thumbnails.New(db.work).CoverVersionOf(ctx, f); got != v3 {
		t.Fatalf("CoverVersionOf = %d, want %d", got, v3)
	}
	if _, err := thumbnails.New(db.work).MarkCoverRendered(ctx, fence, 999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown file: %v", err)
	}
}
