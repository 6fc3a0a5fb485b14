package daemons

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	setup := func(t *testing.T, h http.HandlerFunc) Load {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return Load{Client: srv.Client(), Rate: 100, Duration: time.Second,
			Request: func(ctx context.Context, i int) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			}}
	}

	t.Run("sends at the fixed rate and measures every request", func(t *testing.T) {
		var hits atomic.Int64
		l := setup(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
		res := l.Run(context.Background())
		if res.Sent != 100 || hits.Load() != 100 || res.Errors != 0 {
			t.Fatalf("sent %d, server saw %d, errors %d (%v)", res.Sent, hits.Load(), res.Errors, res.FirstErr)
		}
		if res.Achieved < 90 || res.Achieved > 110 {
			t.Fatalf("achieved %.1f req/s, want ~100", res.Achieved)
		}
		if res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.Max {
			t.Fatalf("percentiles out of order: %v %v %v", res.P50, res.P99, res.Max)
		}
	})

	// One stall of 300 ms holds a lock every later request needs: an
	// open-loop generator keeps sending, and the requests that queued
	// behind the stall count their wait from their scheduled time.
	t.Run("a stalled server shows in the tail", func(t *testing.T) {
		var mu sync.Mutex
		var n atomic.Int64
		l := setup(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if n.Add(1) == 10 {
				time.Sleep(300 * time.Millisecond)
			}
		})
		res := l.Run(context.Background())
		if res.Sent != 100 || res.Errors != 0 {
			t.Fatalf("sent %d errors %d", res.Sent, res.Errors)
		}
		if res.P99 < 200*time.Millisecond {
			t.Fatalf("p99 %v hides a 300 ms stall (closed-loop measurement?)", res.P99)
		}
		if res.P50 > 100*time.Millisecond {
			t.Fatalf("p50 %v: the stall should touch only the requests sent during it", res.P50)
		}
	})

	t.Run("non-200 and failed checks are errors", func(t *testing.T) {
		var n atomic.Int64
		l := setup(t, func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1)%2 == 0 {
				http.Error(w, "no", http.StatusTeapot)
				return
			}
			w.Write([]byte("bad"))
		})
		l.Duration = 200 * time.Millisecond
		l.Check = func(body []byte) error {
			if string(body) == "bad" {
				return errors.New("bad body")
			}
			return nil
		}
		res := l.Run(context.Background())
		if res.Errors != res.Sent || res.FirstErr == nil || res.P99 != 0 {
			t.Fatalf("errors %d of %d, first %v, p99 %v", res.Errors, res.Sent, res.FirstErr, res.P99)
		}
	})

	t.Run("stops sending when the context ends", func(t *testing.T) {
		l := setup(t, func(w http.ResponseWriter, r *http.Request) {})
		l.Duration = 10 * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		res := l.Run(ctx)
		if res.Sent == 0 || res.Sent > 40 {
			t.Fatalf("sent %d in 200 ms at 100 req/s", res.Sent)
		}
	})
}
