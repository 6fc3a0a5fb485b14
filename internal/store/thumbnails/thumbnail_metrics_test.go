package thumbnails_test

import (
	"context"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
)

// TestThumbnailMetricsCountCovers: a cover hashed after an upgrade has a
// render row and a hash row, both ready; the metrics count one ready
// cover, while a pending hash row is queue work like a pending render.
func TestThumbnailMetricsCountCovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	control, _, _ := storetest.MustOpenDB(t)
	testfactory.Library(t, control, &testfactory.LibraryOpts{ID: 1})
	file := testfactory.File(t, control, &testfactory.FileOpts{LibraryID: 1, RelativePath: "a.cbz", Size: 10, MtimeN: 1, Format: "zip"})
	other := testfactory.File(t, control, &testfactory.FileOpts{LibraryID: 1, RelativePath: "b.cbz", Size: 10, MtimeN: 1, Format: "zip"})
	exec := func(q string, id int64) {
		t.Helper()
		if _, err := storetest.Exec(ctx, control, q, id); err != nil {
			t.Fatal(err)
		}
	}
	const ready = `UPDATE thumbnails SET status = 'ready', width = 320, height = 480, media_type = 'image' WHERE id = ?`
	exec(ready, testfactory.Thumbnail(t, control, &testfactory.ThumbnailOpts{FileID: file, LibraryID: 1}))
	hash := testfactory.Thumbnail(t, control, &testfactory.ThumbnailOpts{FileID: file, LibraryID: 1})
	exec(`UPDATE thumbnails SET task = 'hash' WHERE id = ?`, hash)
	exec(ready, hash)
	exec(`UPDATE thumbnails SET task = 'hash' WHERE id = ?`, testfactory.Thumbnail(t, control, &testfactory.ThumbnailOpts{FileID: other, LibraryID: 1}))
	m, err := thumbnails.New(control).ThumbnailMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Ready != 1 || m.Pending != 1 || m.Failed != 0 {
		t.Fatalf("ready %d, pending %d, failed %d; want one ready cover and one pending hash", m.Ready, m.Pending, m.Failed)
	}
}
