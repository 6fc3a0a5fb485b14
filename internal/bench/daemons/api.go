package daemons

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// APIRows: list pages of a real `controld serve` (its own process, its
// real router, auth and store) over loopback HTTP, at a fixed open-loop
// 200 requests/s per endpoint, on databases of two sizes generated with
// SQL; plus controld's peak RSS after the load.
func APIRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const target = "p99 < 20 ms"
	type size struct{ files, jobs int }
	sizes := []size{{20_000, 2_000}, {100_000, 10_000}}
	dur := apiDuration(r)
	if !r.Small() {
		sizes = []size{{100_000, 10_000}, {1_000_000, 100_000}}
	}
	bin, err := r.Bins.Build(ctx, "./cmd/controld")
	if err != nil {
		return []benchx.Row{benchx.NotRunRow("API pages over HTTP", "", target, err)}
	}
	var rows, rss []benchx.Row
	for _, sz := range sizes {
		label := fmt.Sprintf("%s files, %s groups, %s jobs", benchx.Count(sz.files), benchx.Count(sz.files/5), benchx.Count(sz.jobs))
		rs, mem, err := apiSize(ctx, r, bin, sz.files, sz.jobs, dur)
		if err != nil {
			rows = append(rows, benchx.NotRunRow("API pages over HTTP", label, target, err))
			continue
		}
		for i := range rs {
			rs[i].Size = label
		}
		rows = append(rows, rs...)
		rss = append(rss, benchx.Row{Workload: "peak RSS: controld after the API load", Size: label,
			Bindery: benchx.Num(mem) + " MB (VmHWM)", Baseline: "—", Ratio: "—", Target: "— (flat as rows grow)", Status: benchx.Info})
	}
	return append(rows, rss...)
}

// apiDuration is how long each route is loaded: 3 s at the small scale,
// 20 s at the full one.
func apiDuration(r *benchx.Runner) time.Duration {
	if r.Small() {
		return 3 * time.Second
	}
	return 20 * time.Second
}

// endpoint is one list route under load.
type endpoint struct {
	name, path string
	cursors    []string
}

func apiSize(ctx context.Context, r *benchx.Runner, bin string, files, jobs int, dur time.Duration) ([]benchx.Row, float64, error) {
	return apiLoad(ctx, r, bin, files, jobs, dur, nil)
}

// apiLoad generates an index of files and jobs (SQLite), moves it where
// place says (nil: it stays in the SQLite file), serves it with controld
// and loads three list routes at 200 req/s.
func apiLoad(ctx context.Context, r *benchx.Runner, bin string, files, jobs int, dur time.Duration,
	place func(ctx context.Context, sqlitePath string) (string, error)) ([]benchx.Row, float64, error) {
	dir := filepath.Join(r.Data, fmt.Sprintf("api-%d", files))
	lib := filepath.Join(dir, "library")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return nil, 0, err
	}
	if !r.Cfg.Keep {
		defer os.RemoveAll(dir)
	}
	r.Logf("api: generating %d files, %d jobs", files, jobs)
	db, err := generateAPIDB(ctx, bin, filepath.Join(dir, "bindery.db"), lib, files, jobs)
	if err != nil {
		return nil, 0, err
	}
	served := db.Path
	if place != nil {
		if served, err = place(ctx, db.Path); err != nil {
			return nil, 0, err
		}
	}
	srv, err := startControld(ctx, bin, dir, served, lib)
	if err != nil {
		return nil, 0, err
	}
	defer srv.stop()
	srv.settle(ctx, 30*time.Second)
	n := int(dur.Seconds()*200) + 100
	eps := []endpoint{
		{"GET /jobs", "/api/v1/jobs?limit=50", anchors(n, 1, func(r *rand.Rand) string { return db.jobCursor(1 + r.IntN(jobs)) })},
		{"GET /jobs?status=failed", "/api/v1/jobs?limit=50&status=failed", anchors(n, 2, func(r *rand.Rand) string {
			return db.jobCursor(1 + r.IntN(jobs))
		})},
		{"GET /duplicates/groups", "/api/v1/duplicates/groups?limit=50", anchors(n, 3, func(r *rand.Rand) string {
			return db.groupCursor(r.IntN(db.groups()))
		})},
	}
	var rows []benchx.Row
	for _, ep := range eps {
		r.Logf("api: %s at 200 req/s for %s", ep.name, dur)
		cpu0 := srv.cpuTime()
		res := srv.load(ctx, ep, dur)
		cpu := srv.cpuTime() - cpu0
		row := benchx.Row{Workload: "API page " + ep.name + ", 200 req/s over loopback", Baseline: "—", Ratio: "—",
			Target:  "p99 < 20 ms",
			Bindery: fmt.Sprintf("p50 %s ms, p99 %s ms, max %s ms", ms(res.P50), ms(res.P99), ms(res.Max)),
			Status:  benchx.Verdict(res.Errors == 0 && res.P99 < 20*time.Millisecond && res.Achieved >= 190)}
		row.Note = fmt.Sprintf("%d requests at %.0f req/s, controld CPU %.0f%%, load average %s",
			res.Sent, res.Achieved, 100*cpu.Seconds()/(dur+500*time.Millisecond).Seconds(), benchx.LoadAvg1())
		if res.Errors > 0 {
			row.Note += fmt.Sprintf(", %d errors, first: %v", res.Errors, res.FirstErr)
		}
		rows = append(rows, row)
	}
	return rows, srv.peakRSSMB(), nil
}

func ms(d time.Duration) string { return benchx.Num(float64(d) / float64(time.Millisecond)) }

// controld is a running `controld serve` child.
type controld struct {
	cmd    *exec.Cmd
	base   string
	token  string
	client *http.Client
	log    string
	exited chan error
}

// startControld runs the binary on db, listening on a free loopback port,
// and waits until /readyz answers 200.
func startControld(ctx context.Context, bin, dir, db, lib string) (*controld, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	crand.Read(tok)
	c := &controld{base: "http://" + addr, token: hex.EncodeToString(tok), log: filepath.Join(dir, "controld.log"),
		client: &http.Client{Timeout: 10 * time.Second,
			Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute}}}
	logf, err := os.Create(c.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c.cmd = exec.Command(bin, "serve", "--db", db, "--state-dir", filepath.Join(dir, "state"),
		"--library-root", filepath.Dir(lib), "--listen", addr)
	c.cmd.Env = append(os.Environ(), "BINDERY_ADMIN_TOKEN="+c.token)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("controld: %w", err)
	}
	c.exited = make(chan error, 1)
	go func() { c.exited <- c.cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := c.client.Get(c.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		select {
		case err := <-c.exited:
			return nil, fmt.Errorf("controld exited before ready: %v: %s", err, tail(c.log))
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			return nil, fmt.Errorf("controld not ready after 60s: %s", tail(c.log))
		}
	}
}

// load warms the route up (connections, page cache) for half a second,
// then measures.
func (c *controld) load(ctx context.Context, ep endpoint, dur time.Duration) LoadResult {
	l := Load{Client: c.client, Rate: 200, Duration: 500 * time.Millisecond,
		Request: func(ctx context.Context, i int) (*http.Request, error) {
			target := c.base + ep.path
			if cur := ep.cursors[i%len(ep.cursors)]; cur != "" {
				target += "&cursor=" + url.QueryEscape(cur)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			return req, err
		},
		Check: func(body []byte) error {
			var page struct {
				Items *[]json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(body, &page); err != nil || page.Items == nil {
				return fmt.Errorf("not a page: %.200s", body)
			}
			return nil
		}}
	l.Run(ctx)
	l.Duration = dur
	return l.Run(ctx)
}

// cpuTime is the child's user+system CPU time so far.
func (c *controld) cpuTime() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest) // f[0] is field 3 (state); utime, stime are fields 14, 15
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// settle waits (up to max) until controld has used under 5% of a core
// for a second, so that the scheduler's start-up passes over a freshly
// opened database do not land in the measured window.
func (c *controld) settle(ctx context.Context, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		before := c.cpuTime()
		time.Sleep(time.Second)
		if c.cpuTime()-before < 50*time.Millisecond {
			return
		}
	}
}

// peakRSSMB is the child's VmHWM.
func (c *controld) peakRSSMB() float64 { return vmHWMMB(c.cmd.Process.Pid) }

// stop sends SIGTERM (a graceful shutdown) and kills after 15 s.
func (c *controld) stop() {
	c.client.CloseIdleConnections()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		c.kill()
	}
}

func (c *controld) kill() {
	c.cmd.Process.Kill()
	<-c.exited
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// tail is the last lines of a log file, for error notes.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return benchx.Trunc(strings.Join(lines[max(0, len(lines)-3):], " | "), 400)
}
