package scan

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchFiles is BENCH_FILES, default def.
func benchFiles(b *testing.B, def int) int {
	if v := os.Getenv("BENCH_FILES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("BENCH_FILES=%q", v)
		}
		return n
	}
	return def
}

// benchTree writes n small cbz files, half flat in one folder, half nested
// in series folders of 100, each with a ComicInfo.xml.
func benchTree(b *testing.B, e *env, n int) {
	b.Helper()
	for i := range n {
		var rel string
		if i%2 == 0 {
			rel = fmt.Sprintf("flat/book %06d.cbz", i)
		} else {
			rel = fmt.Sprintf("nested/Series %04d (2001)/v%02d/book %06d.cbz", i/200, i%7, i)
		}
		data := cbz(b, ci("Series", fmt.Sprintf("Series %d", i/200), "Number", strconv.Itoa(i), "Publisher", "Bench"), pages(3)...)
		p := filepath.Join(e.root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRescanUnchanged measures a rescan of an unchanged library of
// BENCH_FILES files (default 10,000) against `find -printf '%s %T@'` on the
// same tree, in the same run. Target: 100,000 files in ≤ 3 s.
func BenchmarkRescanUnchanged(b *testing.B) {
	n := benchFiles(b, 10_000)
	e := setup(b)
	e.exec = New(e.worker, Config{})
	benchTree(b, e, n)
	resetPeakRSS() // the peak reported is the scans', not the tree's generation
	if _, err := e.exec.Execute(context.Background(), e.job("{}"), nil); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("find/files=%d", n), func(b *testing.B) {
		for b.Loop() {
			out, err := exec.Command("find", e.root, "-type", "f", "-printf", "%s %T@\n").Output()
			if err != nil {
				b.Fatal(err)
			}
			if c := strings.Count(string(out), "\n"); c != n {
				b.Fatalf("find saw %d files", c)
			}
		}
	})
	b.Run(fmt.Sprintf("scan/files=%d", n), func(b *testing.B) {
		for b.Loop() {
			res, err := e.exec.Execute(context.Background(), e.job("{}"), nil)
			if err != nil {
				b.Fatal(err)
			}
			if res["unchanged"] != int64(n) {
				b.Fatalf("result %v", res)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
		b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
	})
}

// BenchmarkFirstScanCBZ measures the first scan of BENCH_FILES (default
// 10,000) small cbz files with ComicInfo.xml. Target: ≥ 1,000 files/s.
func BenchmarkFirstScanCBZ(b *testing.B) {
	n := benchFiles(b, 10_000)
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		e := setup(b)
		e.exec = New(e.worker, Config{})
		benchTree(b, e, n)
		b.StartTimer()
		start := time.Now()
		res, err := e.exec.Execute(context.Background(), e.job("{}"), nil)
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res["added"] != int64(n) || res["error_count"] != 0 {
			b.Fatalf("result %v", res)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "files/s")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
}

// peakRSSMB is the process's peak resident set (VmHWM), in MB.
// resetPeakRSS hands the heap's free pages back to the system and resets
// the process's VmHWM to its current RSS (Linux's clear_refs), so that a
// later peakRSSMB measures what ran after it.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
