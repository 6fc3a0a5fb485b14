package thumbnails_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// readyCover gives file a ready webp cover without a hash (one rendered
// before migration 29) and clears its flag.
func (db *coverDB) readyCover(t *testing.T, file int64) {
	t.Helper()
	db.exec(t, `INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, created_at, updated_at)
		VALUES (?, ?, ?, 'ready', 'webp', ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
		file, db.lib, "library:"+strconv.FormatInt(db.lib, 10), "covers/old/"+strconv.FormatInt(file, 10)+".webp")
	db.exec(t, `UPDATE library_files SET needs_cover = 0 WHERE id = ?`, file)
}

// TestAdmitCoverHashes: one hash row per unhashed ready cover of a present
// file, in its cover's path, bounded by limit and free capacity; none for
// a hashed cover, a missing file, or a cover whose newest row is active or
// failed; admitting again adds none.
func TestAdmitCoverHashes(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	var old []int64
	for _, rel := range []string{"a.cbz", "b.cbz", "c.cbz"} {
		id := db.addFile(t, db.lib, rel)
		db.readyCover(t, id)
		old = append(old, id)
	}
	hashed := db.addFile(t, db.lib, "hashed.cbz")
	db.readyCover(t, hashed)
	db.exec(t, `UPDATE thumbnails SET cover_hash = -5 WHERE file_id = ?`, hashed)
	gone := db.addFile(t, db.lib, "gone.cbz")
	db.readyCover(t, gone)
	db.exec(t, `UPDATE library_files SET is_missing = 1 WHERE id = ?`, gone)
	failed := db.addFile(t, db.lib, "failed.cbz")
	db.readyCover(t, failed)
	db.exec(t, `INSERT INTO thumbnails (file_id, library_id, group_key, status, task, format, output_relpath, created_at, updated_at)
		VALUES (?, ?, 'library:1', 'failed', 'hash', 'webp', 'covers/x.webp', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`, failed, db.lib)

	if n, err := thumbnails.New(db.ctrl).AdmitCoverHashes(ctx, 10, 2); err != nil || n != 2 {
		t.Fatalf("capacity 2: %d, %v; want 2", n, err)
	}
	if n, err := thumbnails.New(db.ctrl).AdmitCoverHashes(ctx, 10, 2); err != nil || n != 0 {
		t.Fatalf("full queue: %d, %v; want 0 (the backfill waits)", n, err)
	}
	if n, err := thumbnails.New(db.ctrl).AdmitCoverHashes(ctx, 10, 100); err != nil || n != 1 {
		t.Fatalf("the rest: %d, %v; want 1", n, err)
	}
	if n, err := thumbnails.New(db.ctrl).AdmitCoverHashes(ctx, 10, 100); err != nil || n != 0 {
		t.Fatalf("again: %d, %v; want 0", n, err)
	}
	for _, f := range old {
		if got := db.count(t, `SELECT count(*) FROM thumbnails WHERE file_id = ? AND task = 'hash' AND status = 'pending'
			AND output_relpath = ?`, f, "covers/old/"+strconv.FormatInt(f, 10)+".webp"); got != 1 {
			t.Fatalf("file %d: %d hash rows in its cover's path, want 1", f, got)
		}
	}
	if got := db.count(t, `SELECT count(*) FROM thumbnails WHERE task = 'hash' AND status = 'pending' AND file_id IN (?, ?, ?)`,
		hashed, gone, failed); got != 0 {
		t.Fatalf("%d hash rows for a hashed, missing or failed cover", got)
	}
}

// TestHashRowBecomesRender: a file that changes while its hash row is
// pending gets a render, not a hash of its old cover: both admission paths
// turn the pending hash row into a render in the current layout, and the
// file's flag is cleared only then.
func TestHashRowBecomesRender(t *testing.T) {
	ctx := context.Background()
	db := setupCovers(t)
	a, b := db.addFile(t, db.lib, "a.cbz"), db.addFile(t, db.lib, "b.cbz")
	db.readyCover(t, a)
	db.readyCover(t, b)
	if n, err := thumbnails.New(db.ctrl).AdmitCoverHashes(ctx, 10, 100); err != nil || n != 2 {
		t.Fatalf("hash rows: %d, %v", n, err)
	}
	db.exec(t, `UPDATE library_files SET needs_cover = 1 WHERE id = ?`, a)
	if n, err := thumbnails.New(db.ctrl).AdmitPendingCovers(ctx, db.lib, 10, 100, 7, protocol.ImageWebP); err != nil || n != 0 {
		t.Fatalf("AdmitPendingCovers: %d, %v; want 0 new rows (the pending row renders)", n, err)
	}
	if got := db.count(t, `SELECT count(*) FROM thumbnails WHERE file_id = ? AND status = 'pending' AND task = 'render'
		AND output_relpath = ?`, a, thumbnails.CoverRelPath(a, 7, protocol.ImageWebP)); got != 1 {
		t.Fatal("the flagged file's hash row did not become a render in the current layout")
	}
	if got := db.count(t, `SELECT needs_cover FROM library_files WHERE id = ?`, a); got != 0 {
		t.Fatal("flag kept although a render is pending")
	}
	th, created, err := thumbnails.New(db.ctrl).RegenerateThumbnail(ctx, b, protocol.ImageWebP, 100, 7)
	if err != nil || created || th.Task != protocol.TaskRender || th.Status != protocol.ThumbPending {
		t.Fatalf("regenerate over a pending hash row: %+v created=%v %v; want that row, now a render", th, created, err)
	}
}
