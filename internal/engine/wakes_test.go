package engine_test

import (
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/engine/enginetest"
)

// TestIdleLanesWakeOnChange: a lane that found nothing sleeps out a long
// backoff (here 30 s), yet a job another process requests is claimed
// within a few wake intervals, because the change wakes it.
func TestIdleLanesWakeOnChange(t *testing.T) {
	t.Parallel()
	noop := &enginetest.Noop{}
	h := setup(t, noop.Executors(), func(c *engine.Config) {
		c.IdleMin, c.IdleMax, c.WakeInterval = 30*time.Second, 30*time.Second, 50*time.Millisecond
	})
	h.waitFor(1, `SELECT count(*) FROM workers WHERE worker_id = 'test-worker'`)
	time.Sleep(300 * time.Millisecond) // every lane has probed and sleeps its 15–30 s
	requested := time.Now()
	id := h.job("scan", `{"force":true}`)
	h.waitFor(1, `SELECT count(*) FROM jobs WHERE id = ? AND status = 'completed'`, id)
	// waitFor polls, so this bounds the claim from above; the backoff
	// alone would have taken at least 15 s.
	if took := time.Since(requested); took > 5*time.Second {
		t.Fatalf("the job was run %v after it was requested: the idle lane was not woken", took)
	}
}
