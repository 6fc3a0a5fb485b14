package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

func TestReserveIO(t *testing.T) {
	db := storetest.MustOpenClockedDB(t)
	ctx := context.Background()
	if w, err := db.Worker.ReserveIO(ctx, store.BucketThumbnailIO, 1<<20, 0); w != 0 || err != nil {
		t.Fatalf("unlimited = %v, %v", w, err)
	}
	const rate = 10 << 20 // 10 MiB/s
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}
	for i, w := range want {
		got, err := db.Worker.ReserveIO(ctx, store.BucketThumbnailIO, 1<<20, rate)
		if err != nil || got != w {
			t.Fatalf("reservation %d = %v, %v; want %v", i, got, err, w)
		}
	}
	// A second process draws from the same row.
	other := storetest.MustOpen(t, db.Path, store.RoleWorker, db.Clock.Now)
	if got, _ := other.ReserveIO(ctx, store.BucketThumbnailIO, 1<<20, rate); got != 300*time.Millisecond {
		t.Fatalf("other process waits %v", got)
	}
	db.Clock.Advance(time.Second) // the budget refills; no burst is banked
	if got, _ := db.Worker.ReserveIO(ctx, store.BucketThumbnailIO, 1<<20, rate); got != 0 {
		t.Fatalf("after idle second waits %v", got)
	}
	if n, err := storetest.QueryInt(ctx, db.Control, `SELECT count(*) FROM io_rate_limits`); err != nil || n != 1 {
		t.Fatalf("bucket rows %d, %v", n, err)
	}
}
