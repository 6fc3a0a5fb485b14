package backoff

import (
	"testing"
	"time"
)

func TestJob(t *testing.T) {
	t.Parallel()
	for attempt, base := range map[int64]time.Duration{0: time.Second, 1: time.Second, 2: 16 * time.Second,
		3: 81 * time.Second, 7: 2401 * time.Second, 8: time.Hour, 100: time.Hour, 1 << 40: time.Hour} {
		for range 20 {
			if d := Job(attempt); d < base || d > base+base/4 {
				t.Fatalf("Job(%d) = %v, want %v..%v", attempt, d, base, base+base/4)
			}
		}
	}
}

func TestExponential(t *testing.T) {
	t.Parallel()
	cases := []struct {
		got, want time.Duration
	}{
		{WAL(0), 5 * time.Second},
		{WAL(1), 5 * time.Second},
		{WAL(2), 10 * time.Second},
		{WAL(7), 5 * time.Minute},
		{WAL(1 << 40), 5 * time.Minute},
		{Thumbnail(1), time.Minute},
		{Thumbnail(3), 16 * time.Minute},
		{Thumbnail(ThumbnailMaxErrors), 256 * time.Minute},
		{Thumbnail(7), 24 * time.Hour},
		{Exponential(time.Minute, 24*time.Hour, 2, 11), 1024 * time.Minute},
		{Exponential(time.Minute, 24*time.Hour, 2, 12), 24 * time.Hour},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: %v, want %v", i, c.got, c.want)
		}
	}
}
