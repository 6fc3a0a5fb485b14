package leases_test

import (
	"testing"
	"time"
)

// TestClaimGate: a busy claim path claims without probing, so it leaves
// stale leases for at most a second (staleCheckEvery) before it looks
// again, and a claim that finds nothing always probes and recovers.
func TestClaimGate(t *testing.T) {
	const short = 100 * time.Millisecond
	claim := func(t *testing.T, f *fixture) int64 {
		t.Helper()
		th, err := f.worker.ClaimThumbnail(f.ctx, "w1", short)
		if err != nil {
			t.Fatal(err)
		}
		if th == nil {
			return 0
		}
		return th.ID
	}
	status := func(t *testing.T, f *fixture, id int64) string {
		t.Helper()
		return f.str(t, `SELECT status || '/' || recovered_count FROM thumbnails WHERE id = ?`, id)
	}

	t.Run("busy path recovers within a second", func(t *testing.T) {
		f := setupLease(t)
		t1, t2, t3 := f.addThumb(t, 1, "g"), f.addThumb(t, 2, "g"), f.addThumb(t, 3, "g")
		if got := claim(t, f); got != t1 {
			t.Fatalf("first claim took %d, want %d", got, t1)
		}
		f.clock.Advance(2 * short) // t1's lease expired; the path is busy and probed 200 ms ago
		if got := claim(t, f); got != t2 {
			t.Fatalf("second claim took %d, want %d", got, t2)
		}
		if got := status(t, f, t1); got != "running/0" {
			t.Fatalf("stale t1 = %s before the next probe, want running/0", got)
		}
		f.clock.Advance(time.Second)
		if got := claim(t, f); got != t3 {
			t.Fatalf("third claim took %d, want %d (the row that never lost a worker)", got, t3)
		}
		if got := status(t, f, t1); got != "pending/1" {
			t.Fatalf("stale t1 = %s after a second, want pending/1", got)
		}
	})

	t.Run("a claim that finds nothing probes and recovers", func(t *testing.T) {
		f := setupLease(t)
		t1 := f.addThumb(t, 1, "g")
		if got := claim(t, f); got != t1 {
			t.Fatalf("first claim took %d, want %d", got, t1)
		}
		f.clock.Advance(2 * short)
		if got := claim(t, f); got != t1 {
			t.Fatalf("claim after the lease expired took %d, want the recovered %d", got, t1)
		}
		if got := status(t, f, t1); got != "running/1" {
			t.Fatalf("t1 = %s, want running/1", got)
		}
	})
}
