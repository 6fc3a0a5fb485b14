// Package enginetest holds trivial executors for tests of the engine and of
// real workerd processes (BINDERY_TEST_EXECUTOR=noop). They do no I/O on
// the library; they only record what they were given.
package enginetest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
)

// Noop implements every executor interface. Each execution waits Delay
// (returning early with ctx's error when ctx ends), then succeeds; every
// execution is recorded in memory and, when Log is set, as one line
// "<kind> <id>\n" written atomically (Log should be an O_APPEND file).
type Noop struct {
	Delay time.Duration
	Log   io.Writer

	mu   sync.Mutex
	runs []Run
}

// Run is one recorded execution.
type Run struct {
	Kind string
	ID   int64
	Err  error
}

// Executors plugs n into every lane.
func (n *Noop) Executors() engine.Executors {
	return engine.Executors{Scan: n, Hash: n, Thumbnail: n, Cleanup: n, Checkpoint: n}
}

// Runs returns a copy of the recorded executions.
func (n *Noop) Runs() []Run {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Run(nil), n.runs...)
}

func (n *Noop) run(ctx context.Context, kind string, id int64) error {
	var err error
	if n.Delay > 0 {
		t := time.NewTimer(n.Delay)
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
		}
		t.Stop()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.runs = append(n.runs, Run{Kind: kind, ID: id, Err: err})
	if n.Log != nil && err == nil {
		fmt.Fprintf(n.Log, "%s %d\n", kind, id)
	}
	return err
}

func (n *Noop) Execute(ctx context.Context, job model.Job, rep engine.Reporter) (map[string]int64, error) {
	rep.Progress(1, 1)
	if err := n.run(ctx, string(job.Kind), job.ID); err != nil {
		return nil, err
	}
	return map[string]int64{"files_seen": 0}, nil
}

func (n *Noop) Render(ctx context.Context, t model.Thumbnail) (engine.ThumbnailResult, error) {
	if err := n.run(ctx, "thumbnail", t.ID); err != nil {
		return engine.ThumbnailResult{}, err
	}
	return engine.ThumbnailResult{Width: 1, Height: 1, BytesSize: 1}, nil
}

func (n *Noop) Clean(ctx context.Context, c model.CleanupJob) (int64, int64, error) {
	return 0, 0, n.run(ctx, "cleanup", c.ID)
}

func (n *Noop) Checkpoint(ctx context.Context, w model.WALJob) (engine.CheckpointResult, error) {
	return engine.CheckpointResult{}, n.run(ctx, "wal", w.ID)
}
