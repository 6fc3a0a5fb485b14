package pipeline

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// TestWalkAhead pages through ids 1..n: every page once, in order, the
// next one already being fetched while the caller holds the current one,
// and the walk's end is an empty page even after a short one.
func TestWalkAhead(t *testing.T) {
	t.Parallel()
	const n, limit = 10, 4
	var calls atomic.Int32
	fetched := make(chan int64, 10)
	fetch := func(after int64) ([]int64, error) {
		calls.Add(1)
		fetched <- after
		var page []int64
		for id := after + 1; id <= n && len(page) < limit; id++ {
			page = append(page, id)
		}
		return page, nil
	}
	w := WalkAhead(func(id int64) int64 { return id }, fetch)
	if first := <-fetched; first != 0 {
		t.Fatalf("first fetch after %d, want 0", first)
	}
	var got []int64
	for {
		page, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		// The next page is being fetched while the caller holds this one.
		if next := <-fetched; next != page[len(page)-1] {
			t.Fatalf("page %v: next fetch after %d, want %d", page, next, page[len(page)-1])
		}
		got = append(got, page...)
	}
	w.Stop()
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(got, want) {
		t.Errorf("walked %v, want %v", got, want)
	}
	// Pages of 4, 4, 2, then the empty one that ends the walk.
	if c := calls.Load(); c != 4 || len(fetched) != 0 {
		t.Errorf("%d fetches, want 4", c)
	}
}

// TestWalkAheadStops: an error ends the walk; Stop waits for a fetch under
// way, and a walk stopped early fetches nothing more.
func TestWalkAheadStops(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	w := WalkAhead(func(id int64) int64 { return id }, func(after int64) ([]int64, error) {
		if after >= 2 {
			return nil, boom
		}
		return []int64{after + 1}, nil
	})
	for _, want := range []int64{1, 2} {
		if page, err := w.Next(); err != nil || !slices.Equal(page, []int64{want}) {
			t.Fatalf("page %v, %v; want [%d]", page, err, want)
		}
	}
	if _, err := w.Next(); !errors.Is(err, boom) {
		t.Fatalf("third page: %v, want boom", err)
	}
	if page, err := w.Next(); page != nil || err != nil {
		t.Fatalf("after the error: %v, %v; want the walk ended", page, err)
	}

	release := make(chan struct{})
	var done atomic.Bool
	w = WalkAhead(func(id int64) int64 { return id }, func(after int64) ([]int64, error) {
		<-release
		done.Store(true)
		return []int64{after + 1}, nil
	})
	go close(release)
	w.Stop()
	if !done.Load() {
		t.Fatal("Stop returned before the fetch under way ended")
	}
	if page, err := w.Next(); page != nil || err != nil {
		t.Fatalf("after Stop: %v, %v; want the walk ended", page, err)
	}
}
