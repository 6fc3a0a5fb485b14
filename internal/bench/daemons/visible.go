// Package daemons holds the bench driver's workloads that run controld
// and workerd as their own processes on generated libraries: time to
// visible, the API under open-loop load, the first run a new user meets
// and how the per-file cost grows with the library. It imports only
// internal/benchx of the driver.
package daemons

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
	"github.com/bindery-nas/bindery/internal/fixtures"
)

// VisibleRows: both daemons as their own processes on a library of
// comic-sized files whose full hash keeps running (hashing limited to a
// NAS disk's 200 MB/s, and restarted with the other algorithm whenever it
// ends); a new cbz is dropped in and a scan requested, and the time until
// GET /files lists it with a ready cover is taken, ten times. The same is
// done five times with nothing running, as the baseline.
func VisibleRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "time to visible: new cbz, scan requested while a full hash runs", "p95 ≤ 5 s"
	files := r.Pick([]int{8}, []int{40})[0]
	size := fmt.Sprintf("%d comic-sized files, hash at 200 MB/s", files)
	v, err := startVisible(ctx, r, files)
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	defer v.stop()
	idle, err := v.tries(ctx, 5, false)
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	busy, err := v.tries(ctx, 10, true)
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	p95 := percentile(busy, 0.95)
	return []benchx.Row{{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("p50 %s, p95 %s, max %s (10 tries)", secsD(percentile(busy, 0.5)), secsD(p95), secsD(slices.Max(busy))),
		Baseline: fmt.Sprintf("same with nothing running: p50 %s, max %s (5 tries)", secsD(percentile(idle, 0.5)), secsD(slices.Max(idle))),
		Ratio:    benchx.Ratio(float64(percentile(busy, 0.5)), float64(percentile(idle, 0.5))) + " idle p50",
		Target:   target, Status: benchx.Verdict(p95 <= 5*time.Second),
		Note: fmt.Sprintf("%d hash yields", v.yields(ctx))}}
}

func secsD(d time.Duration) string { return benchx.Secs(float64(d)) }

// percentile is the nearest-rank p-quantile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// visible is a running controld and workerd over one library.
type visible struct {
	c      *controld
	worker *exec.Cmd
	lib    string
	id     int64
	alg    int
}

func startVisible(ctx context.Context, r *benchx.Runner, files int) (*visible, error) {
	ctlBin, err := r.Bins.Build(ctx, "./cmd/controld")
	if err != nil {
		return nil, err
	}
	wrkBin, err := r.Bins.Build(ctx, "./cmd/workerd")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.Data, "visible")
	v := &visible{lib: filepath.Join(dir, "libraries", "comics")}
	r.Logf("visible: generating %d comic-sized files", files)
	if err := comicTree(v.lib, files); err != nil {
		return nil, err
	}
	if err := v.start(ctx, ctlBin, wrkBin, dir, "bench-visible"); err != nil {
		return nil, err
	}
	var lib struct{ ID int64 }
	if err := v.call(ctx, "PATCH", "/settings", map[string]any{"io.hash_rate_limit_mb_s": 200}, nil); err != nil {
		v.stop()
		return nil, err
	}
	if err := v.call(ctx, "POST", "/libraries", map[string]any{"name": "comics", "path": v.lib}, &lib); err != nil {
		v.stop()
		return nil, err
	}
	v.id = lib.ID
	if err := v.call(ctx, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": v.id}, nil); err != nil {
		v.stop()
		return nil, err
	}
	return v, nil
}

// start runs controld and one workerd on a database under dir, over the
// library folder v.lib. workerd's environment is the driver's plus
// BENCH_WORKERD_ENV (space-separated NAME=value pairs, e.g.
// MALLOC_ARENA_MAX=8), so one daemon's setting can be compared alone.
func (v *visible) start(ctx context.Context, ctlBin, wrkBin, dir, workerID string) error {
	db := filepath.Join(dir, "state", "bindery.db")
	var err error
	if v.c, err = startControld(ctx, ctlBin, dir, db, v.lib); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "workerd.log"))
	if err != nil {
		v.stop()
		return err
	}
	defer logf.Close()
	v.worker = exec.Command(wrkBin, "run", "--db", db, "--state-dir", filepath.Join(dir, "state"),
		"--library-root", filepath.Dir(v.lib), "--worker-id", workerID)
	v.worker.Env = append(os.Environ(), strings.Fields(os.Getenv("BENCH_WORKERD_ENV"))...)
	v.worker.Stdout, v.worker.Stderr = logf, logf
	if err := v.worker.Start(); err != nil {
		v.stop()
		return err
	}
	return nil
}

func (v *visible) stop() {
	if v.worker != nil && v.worker.Process != nil {
		v.worker.Process.Kill()
		v.worker.Wait()
	}
	if v.c != nil {
		v.c.stop()
	}
}

// comicTree writes n cbz files of 20–80 MB (one small page and random
// padding, stored), unless they are there already.
func comicTree(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	page, err := fixtures.Image(fixtures.JPEG, 64, 96, 1)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(n), 3))
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("Book %03d.cbz", i))
		if _, err := os.Stat(p); err == nil {
			continue
		}
		pad := make([]byte, 20<<20+r.IntN(60<<20))
		for k := 0; k+8 <= len(pad); k += 8 {
			v := r.Uint64()
			for b := range 8 {
				pad[k+b] = byte(v >> (8 * b))
			}
		}
		book, err := fixtures.Zip([]fixtures.File{{Name: "001.jpg", Data: page}, {Name: "pad.bin", Data: pad}}, zip.Store)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, book, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tries drops n new books in, one at a time, and times each until it is
// listed with a ready cover; with busy, a full hash runs during each.
func (v *visible) tries(ctx context.Context, n int, busy bool) ([]time.Duration, error) {
	var out []time.Duration
	for i := range n {
		if err := v.settle(ctx, busy); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("incoming/%s-%02d.cbz", map[bool]string{false: "idle", true: "busy"}[busy], i)
		book, err := fixtures.CBZ(fixtures.Book{Pages: 3, Page: fixtures.PageOptions{W: 600, H: 900, Seed: 1000*len(out) + i + 7}})
		if err != nil {
			return nil, err
		}
		p := filepath.Join(v.lib, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, book, 0o644); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := v.call(ctx, "POST", "/jobs", map[string]any{"kind": "scan", "library_id": v.id}, nil); err != nil {
			return nil, err
		}
		if err := v.waitListed(ctx, name); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// settle waits until nothing runs (idle), or until a hash job of the
// library runs, starting one with the other algorithm when none is left.
func (v *visible) settle(ctx context.Context, busy bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var running, pending struct{ Items []json.RawMessage }
		if err := v.call(ctx, "GET", "/jobs?status=running&limit=10", nil, &running); err != nil {
			return err
		}
		if err := v.call(ctx, "GET", "/jobs?status=pending&limit=10", nil, &pending); err != nil {
			return err
		}
		var hashing struct{ Items []json.RawMessage }
		if err := v.call(ctx, "GET", "/jobs?status=running&kind=hash&limit=1", nil, &hashing); err != nil {
			return err
		}
		switch {
		case !busy && len(running.Items)+len(pending.Items) == 0:
			return nil
		case busy && len(hashing.Items) > 0:
			return nil
		case busy && len(running.Items)+len(pending.Items) == 0:
			v.alg++
			alg := []string{"sha256", "blake3"}[v.alg%2]
			if err := v.call(ctx, "PATCH", "/settings", map[string]any{"hash.algorithm": alg}, nil); err != nil {
				return err
			}
			if err := v.call(ctx, "POST", "/jobs", map[string]any{"kind": "hash", "library_id": v.id}, nil); err != nil {
				return err
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("visible: jobs did not settle (busy=%v) within 2 minutes: %s", busy, tail(v.c.log))
}

// waitListed polls GET /files until rel is listed with a ready cover.
func (v *visible) waitListed(ctx context.Context, rel string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var page struct {
			Items []struct {
				RelativePath string `json:"relative_path"`
				Cover        struct {
					Status string `json:"status"`
				} `json:"cover"`
			} `json:"items"`
		}
		if err := v.call(ctx, "GET", fmt.Sprintf("/files?library_id=%d&limit=200", v.id), nil, &page); err != nil {
			return err
		}
		for _, f := range page.Items {
			if f.RelativePath == rel && f.Cover.Status == "ready" {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("visible: %s not listed with a cover within 2 minutes", rel)
}

// yields counts the hash jobs that yielded to a scan.
func (v *visible) yields(ctx context.Context) int {
	var page struct {
		Items []struct {
			Result map[string]int64 `json:"result"`
		} `json:"items"`
	}
	if v.call(ctx, "GET", "/jobs?kind=hash&status=completed&limit=200", nil, &page) != nil {
		return -1
	}
	n := 0
	for _, j := range page.Items {
		if j.Result["yielded"] == 1 {
			n++
		}
	}
	return n
}

func (v *visible) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, v.c.base+"/api/v1"+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+v.c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := v.c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
