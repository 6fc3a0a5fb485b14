package thumbs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// finish ends th as the engine would after Render: ready with the result,
// under th's fence.
func (e *env) finish(t *testing.T, th model.Thumbnail) (got struct{ hash int64 }, err error) {
	t.Helper()
	res, err := e.r.Render(context.Background(), th)
	if err != nil {
		return got, err
	}
	got.hash = *res.CoverHash
	return got, leases.New(e.work).FinishThumbnail(context.Background(), th.Fence(), leases.ThumbnailDone(res))
}

func (e *env) storedHash(t *testing.T, id int64) (int64, bool) {
	t.Helper()
	row, err := thumbnails.New(e.ctrl).GetThumbnail(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if row.CoverHash == nil {
		return 0, false
	}
	return *row.CoverHash, true
}

// hashRow admits the hash row of file's cover after making its ready row
// one of before migration 29 (no hash), and claims it.
func (e *env) hashRow(t *testing.T, file int64) model.Thumbnail {
	t.Helper()
	ctx := context.Background()
	if _, err := storetest.Exec(ctx, e.ctrl, `UPDATE thumbnails SET cover_hash = NULL WHERE file_id = ?`, file); err != nil {
		t.Fatal(err)
	}
	if n, err := thumbnails.New(e.ctrl).AdmitCoverHashes(ctx, 100, 1000); err != nil || n != 1 {
		t.Fatalf("AdmitCoverHashes = %d, %v; want 1", n, err)
	}
	id, err := storetest.QueryInt(ctx, e.ctrl, `SELECT id FROM thumbnails WHERE file_id = ? AND task = 'hash' AND status = 'pending'`, file)
	if err != nil {
		t.Fatal(err)
	}
	th, err := thumbnails.New(e.ctrl).GetThumbnail(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return claimed(t, e.ctrl, th)
}

// TestRenderStoresCoverHash: a render ends ready with the hash of the
// cover file it wrote, and an old cover gets its hash from a hash row
// that reads the cached file, without a render, even with its book gone;
// with the cached file gone the hash row renders.
func TestRenderStoresCoverHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	book := mustZip(t, fixtures.File{Name: "p1.jpg", Data: encodeJPEGQ(t, coverArt(600, 900, 3), 90)})
	id := e.put(t, "a/book.cbz", book)
	th := e.claim(t, id, protocol.ImageWebP)
	got, err := e.finish(t, th)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := os.ReadFile(filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := CoverHash(cached)
	if err != nil {
		t.Fatal(err)
	}
	if stored, ok := e.storedHash(t, th.ID); !ok || stored != int64(want) || got.hash != int64(want) {
		t.Fatalf("stored hash %016x (%v), result %016x, want the cached cover's %016x", stored, ok, got.hash, want)
	}

	t.Run("hash row reads the cache", func(t *testing.T) {
		before, version := e.r.Stats(), mustVersion(t, e, id)
		if err := os.Remove(filepath.Join(e.lib, "a", "book.cbz")); err != nil {
			t.Fatal(err)
		}
		hr := e.hashRow(t, id)
		if hr.Task != protocol.TaskHash || hr.OutputRelpath != th.OutputRelpath {
			t.Fatalf("hash row %+v", hr)
		}
		if _, err := e.finish(t, hr); err != nil {
			t.Fatalf("hash row without its book: %v", err)
		}
		after := e.r.Stats()
		if after.CachedHashes != before.CachedHashes+1 || after.Renders != before.Renders {
			t.Fatalf("stats %+v after %+v: want one cached hash, no render", after, before)
		}
		if stored, ok := e.storedHash(t, hr.ID); !ok || stored != int64(want) {
			t.Fatalf("hash row stored %016x (%v), want %016x", stored, ok, want)
		}
		if v := mustVersion(t, e, id); v != version {
			t.Fatalf("cover version %d → %d: a hash row must not change the cover URL", version, v)
		}
		if n, err := thumbnails.New(e.ctrl).AdmitCoverHashes(ctx, 100, 1000); err != nil || n != 0 {
			t.Fatalf("AdmitCoverHashes after the backfill = %d, %v; want 0", n, err)
		}
	})

	for name, spoil := range map[string]func(path string) error{
		"gone":    os.Remove,
		"corrupt": func(path string) error { return os.WriteFile(path, []byte("not a cover"), 0o644) },
	} {
		t.Run("hash row renders when the cache is "+name, func(t *testing.T) {
			hashRowRenders(t, e, "b-"+name+"/book.cbz", book, spoil, want)
		})
	}

	t.Run("a lost lease writes no hash", func(t *testing.T) {
		id := e.put(t, "c/book.cbz", book)
		if _, err := e.finish(t, e.claim(t, id, protocol.ImageWebP)); err != nil {
			t.Fatal(err)
		}
		stale := e.hashRow(t, id)
		claimed(t, e.ctrl, stale) // recovered and claimed again: stale's epoch is old
		_, err := e.finish(t, stale)
		if !errors.Is(err, store.ErrLeaseLost) && !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("finish under a lost lease: %v", err)
		}
		if h, ok := e.storedHash(t, stale.ID); ok {
			t.Fatalf("a lost lease wrote hash %016x", h)
		}
	})

	t.Run("a failed hash row is not admitted again", func(t *testing.T) {
		id := e.put(t, "d/book.cbz", book)
		if _, err := e.finish(t, e.claim(t, id, protocol.ImageWebP)); err != nil {
			t.Fatal(err)
		}
		hr := e.hashRow(t, id)
		if err := leases.New(e.work).FailThumbnail(ctx, hr.Fence(), protocol.ErrDecodeError, "test"); err != nil {
			t.Fatal(err)
		}
		if n, err := thumbnails.New(e.ctrl).AdmitCoverHashes(ctx, 100, 1000); err != nil || n != 0 {
			t.Fatalf("AdmitCoverHashes after a failed hash row = %d, %v; want 0", n, err)
		}
	})
}

// hashRowRenders: a hash row whose cached cover spoil made unusable
// renders the cover again (the book is there) and stores its hash.
func hashRowRenders(t *testing.T, e *env, rel string, book []byte, spoil func(string) error, want uint64) {
	t.Helper()
	id := e.put(t, rel, book)
	th := e.claim(t, id, protocol.ImageWebP)
	if _, err := e.finish(t, th); err != nil {
		t.Fatal(err)
	}
	if err := spoil(filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath))); err != nil {
		t.Fatal(err)
	}
	before := e.r.Stats()
	hr := e.hashRow(t, id)
	if _, err := e.finish(t, hr); err != nil {
		t.Fatal(err)
	}
	if after := e.r.Stats(); after.Renders != before.Renders+1 || after.CachedHashes != before.CachedHashes {
		t.Fatalf("stats %+v after %+v: want a render", after, before)
	}
	if stored, ok := e.storedHash(t, hr.ID); !ok || stored != int64(want) {
		t.Fatalf("re-rendered cover hash %016x (%v), want %016x", stored, ok, want)
	}
}

func mustVersion(t *testing.T, e *env, id int64) int64 {
	t.Helper()
	v, err := thumbnails.New(e.ctrl).CoverVersionOf(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
