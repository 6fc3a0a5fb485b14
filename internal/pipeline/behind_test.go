package pipeline

import (
	"errors"
	"testing"
)

// TestBehind: Start runs the write while the caller goes on; Wait returns
// its error once, and reports whether there was a write to wait for.
func TestBehind(t *testing.T) {
	t.Parallel()
	var b Behind
	if waited, err := b.Wait(); waited || err != nil {
		t.Fatalf("zero Behind: waited %v, %v; want nothing to wait for", waited, err)
	}
	release, running := make(chan struct{}), make(chan struct{})
	boom := errors.New("boom")
	b.Start(func() error {
		close(running)
		<-release
		return boom
	})
	<-running // the write runs while the caller holds the next batch
	close(release)
	if waited, err := b.Wait(); !waited || !errors.Is(err, boom) {
		t.Fatalf("Wait: waited %v, %v; want the write's error", waited, err)
	}
	if waited, err := b.Wait(); waited || err != nil {
		t.Fatalf("second Wait: waited %v, %v; want nothing left", waited, err)
	}
	b.Start(func() error { return nil })
	if waited, err := b.Wait(); !waited || err != nil {
		t.Fatalf("Wait after a clean write: waited %v, %v", waited, err)
	}
}
