package daemons

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Load is an open-loop HTTP load: requests leave on a fixed schedule
// (Rate per second) whatever the server's pace, and each latency is taken
// from the request's scheduled send time, not from when it actually left,
// so a stalled server or a starved client shows up in the tail instead of
// silently lowering the rate (coordinated omission).
type Load struct {
	Client *http.Client
	// Rate is requests per second; default 200.
	Rate int
	// Duration is how long to send; default 5s.
	Duration time.Duration
	// Request builds the i-th request.
	Request func(ctx context.Context, i int) (*http.Request, error)
	// Check validates a response body (status already checked = 200).
	Check func(body []byte) error
}

// LoadResult is the latency distribution of one Load.
type LoadResult struct {
	Sent     int
	Errors   int
	FirstErr error
	// P50, P99 and Max are over successful requests.
	P50, P99, Max time.Duration
	// Achieved is the rate requests actually left at.
	Achieved float64
}

// Run sends the load and waits for every response.
func (l Load) Run(ctx context.Context) LoadResult {
	rate := l.Rate
	if rate <= 0 {
		rate = 200
	}
	dur := l.Duration
	if dur <= 0 {
		dur = 5 * time.Second
	}
	n := int(dur.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	var (
		mu   sync.Mutex
		lat  = make([]time.Duration, 0, n)
		res  LoadResult
		wg   sync.WaitGroup
		last time.Time
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.FirstErr == nil {
			res.FirstErr = err
		}
	}
	start := time.Now()
	for i := range n {
		sched := start.Add(time.Duration(i) * interval)
		if d := time.Until(sched); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		res.Sent++
		last = time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.one(ctx, i); err != nil {
				fail(err)
				return
			}
			d := time.Since(sched)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if res.Sent > 1 {
		res.Achieved = float64(res.Sent-1) / last.Sub(start).Seconds()
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
		res.Max = lat[len(lat)-1]
	}
	return res
}

func (l Load) one(ctx context.Context, i int) error {
	req, err := l.Request(ctx, i)
	if err != nil {
		return err
	}
	resp, err := l.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d: %.200s", req.URL.RequestURI(), resp.StatusCode, body)
	}
	if l.Check != nil {
		if err := l.Check(body); err != nil {
			return fmt.Errorf("%s: %w", req.URL.RequestURI(), err)
		}
	}
	return nil
}
