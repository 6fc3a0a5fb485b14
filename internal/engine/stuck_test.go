package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// renderEngine is an engine over a fresh database holding one pending
// cover row, rendering with render under cfg.
func renderEngine(t *testing.T, render renderFunc, cfg Config) (*Engine, *store.Store) {
	t.Helper()
	path := storetest.MustMigrate(t)
	control := storetest.MustOpen(t, path, store.RoleControl, time.Now)
	worker := storetest.MustOpen(t, path, store.RoleWorker, time.Now)
	if _, err := storetest.InsertID(context.Background(), control, `INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (1, 1, 'g', 'x.webp', ?1, ?1) RETURNING id`, protocol.FormatTime(control.Now())); err != nil {
		t.Fatal(err)
	}
	cfg.WorkerID = "w"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := New(worker, Executors{Thumbnail: render}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.workCtx, e.cancelWork = context.WithCancelCause(context.Background())
	t.Cleanup(func() { e.cancelWork(errShutdown) })
	e.loadSettings(context.Background())
	return e, control
}

// TestRenderDeadline: a render that runs past its deadline is cancelled,
// and the row fails render_timeout; it is not taken for stuck.
func TestRenderDeadline(t *testing.T) {
	t.Parallel()
	stuck := make(chan struct{}, 1)
	e, control := renderEngine(t, func(ctx context.Context, _ model.Thumbnail) (ThumbnailResult, error) {
		<-ctx.Done()
		return ThumbnailResult{}, context.Cause(ctx)
	}, Config{Lease: time.Second, RenderTimeout: 300 * time.Millisecond, OnStuck: func() { stuck <- struct{}{} }})
	start := time.Now()
	if ok, err := e.thumbnailOnce(false)(context.Background()); !ok || err != nil {
		t.Fatalf("claimed %v, err %v", ok, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the render ended after %v; its deadline was 300ms", took)
	}
	var status, code string
	if err := storetest.QueryRow(context.Background(), control, `SELECT status, error_code FROM thumbnails`).Scan(&status, &code); err != nil {
		t.Fatal(err)
	}
	if status != string(protocol.ThumbFailed) || code != protocol.ErrRenderTimeout {
		t.Fatalf("row %s/%s, want failed/%s", status, code, protocol.ErrRenderTimeout)
	}
	select {
	case <-stuck:
		t.Fatal("a render that returned on its cancel was taken for stuck")
	default:
	}
}

// TestStuckRender: a render that ignores its cancel is reported stuck
// (Config.OnStuck) two leases after its deadline, and not before.
func TestStuckRender(t *testing.T) {
	t.Parallel()
	const lease, deadline = time.Second, 200 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := make(chan time.Time, 1)
	e, _ := renderEngine(t, func(ctx context.Context, _ model.Thumbnail) (ThumbnailResult, error) {
		<-release // as a C call that no context reaches
		return ThumbnailResult{}, nil
	}, Config{Lease: lease, RenderTimeout: deadline, OnStuck: func() { stuck <- time.Now() }})
	start := time.Now()
	go func() { _, _ = e.thumbnailOnce(false)(context.Background()) }()
	select {
	case at := <-stuck:
		if took := at.Sub(start); took < deadline+2*lease {
			t.Fatalf("reported stuck %v after it began, before its deadline and two leases (%v)", took, deadline+2*lease)
		}
	case <-time.After(deadline + 10*lease):
		t.Fatal("a render that ignored its cancel was never reported stuck")
	}
}
