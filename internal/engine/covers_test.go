package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
)

// gated runs a job until released and counts the renders under way.
type gated struct {
	started, release chan struct{}
	rendering, most  atomic.Int32
}

func (g *gated) Execute(ctx context.Context, _ model.Job, _ engine.Reporter) (map[string]int64, error) {
	close(g.started)
	select {
	case <-g.release:
		return map[string]int64{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *gated) Render(context.Context, model.Thumbnail) (engine.ThumbnailResult, error) {
	n := g.rendering.Add(1)
	defer g.rendering.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	time.Sleep(30 * time.Millisecond)
	return engine.ThumbnailResult{Width: 1, Height: 1, BytesSize: 1}, nil
}

// TestEngineCoversYieldToJobs: while a scan or a hash job runs in the
// process, its two thumbnail lanes render one cover at a time; once the
// job ends, both render again.
func TestEngineCoversYieldToJobs(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"scan", "hash"} {
		g := &gated{started: make(chan struct{}), release: make(chan struct{})}
		h := setup(t, engine.Executors{Scan: g, Hash: g, Thumbnail: g}, nil)
		id := h.job(kind, `{}`)
		<-g.started
		for i := range 20 {
			h.thumb(int64(i))
		}
		h.waitFor(20, `SELECT count(*) FROM thumbnails WHERE status = 'ready'`)
		if m := g.most.Load(); m != 1 {
			t.Fatalf("%s running: %d covers rendered at once, want 1", kind, m)
		}
		close(g.release)
		h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'completed'`, id)
		for i := range 20 {
			h.thumb(int64(100 + i))
		}
		h.waitFor(40, `SELECT count(*) FROM thumbnails WHERE status = 'ready'`)
		if m := g.most.Load(); m != 2 {
			t.Fatalf("after the %s: at most %d covers rendered at once, want 2", kind, m)
		}
		h.stop()
	}
}
