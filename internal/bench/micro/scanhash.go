// Package micro holds the bench driver's workloads that run the packages'
// own Benchmark functions (compiled test binaries, one process per size):
// scan, hash, duplicates, covers, the store's claim and duplicate pages,
// WAL checkpoints, plan resolution and page digests, each beside the tool
// users compare it with. It imports only internal/benchx of the driver.
package micro

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// Scan and hash workloads: internal/scan's and internal/hashing's
// benchmarks at two or three sizes each, so the table shows whether cost
// grows linearly.

// RescanRows: BenchmarkRescanUnchanged (the real scan executor on a
// generated tree of cbz files, flat and nested) beside `find -printf` on
// the same tree; also the test process's peak RSS per size.
func RescanRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "rescan unchanged files", "≤ 3 s per 100k files (≥ 33,333 files/s)"
	const rssWork, rssTarget = "peak RSS: scan (process VmHWM, first scan + rescan)", "≤ 150 MB at 100k, flat"
	var rows, rss []benchx.Row
	for _, n := range r.Pick([]int{1000, 3000}, []int{10_000, 50_000, 100_000}) {
		size := benchx.Count(n) + " files"
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/scan", Bench: "RescanUnchanged$",
			Env: []string{fmt.Sprint("BENCH_FILES=", n)}})
		if err != nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, err))
			continue
		}
		scan, find := o.Find(fmt.Sprintf("scan/files=%d", n)), o.Find(fmt.Sprintf("find/files=%d", n))
		if scan == nil || find == nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "RescanUnchanged")))
			continue
		}
		rate := float64(n) / (scan.Metrics["ns/op"] / 1e9)
		rows = append(rows, benchx.Row{Workload: work, Size: size,
			Bindery:  fmt.Sprintf("%s (%s files/s)", benchx.Secs(scan.Metrics["ns/op"]), benchx.Num(rate)),
			Baseline: "find -printf: " + benchx.Secs(find.Metrics["ns/op"]),
			Ratio:    benchx.Ratio(scan.Metrics["ns/op"], find.Metrics["ns/op"]) + " find's time",
			Target:   target, Status: benchx.Verdict(rate >= 100_000/3.0)})
		mb, ok := scan.Metrics["peak-RSS-MB"]
		if !ok {
			mb = o.MaxRSSMB
		}
		row := benchx.Row{Workload: rssWork, Size: size, Bindery: benchx.Num(mb) + " MB", Baseline: "—", Ratio: "—",
			Target: rssTarget, Status: benchx.Info}
		if n >= 100_000 {
			row.Status = benchx.Verdict(mb <= 150)
		}
		rss = append(rss, row)
	}
	return append(rows, rss...)
}

// FirstScanRows: BenchmarkFirstScanCBZ, files/s of a first scan of small
// cbz files with ComicInfo.xml.
func FirstScanRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "first scan, cbz with ComicInfo", "≥ 1,000 files/s"
	var rows []benchx.Row
	for _, n := range r.Pick([]int{500, 1000}, []int{2000, 10_000}) {
		size := benchx.Count(n) + " files"
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/scan", Bench: "FirstScanCBZ$",
			Env: []string{fmt.Sprint("BENCH_FILES=", n)}})
		if err != nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, err))
			continue
		}
		res := o.Find("BenchmarkFirstScanCBZ")
		if res == nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "FirstScanCBZ")))
			continue
		}
		rate := res.Metrics["files/s"]
		rows = append(rows, benchx.Row{Workload: work, Size: size,
			Bindery:  fmt.Sprintf("%s files/s (%s)", benchx.Num(rate), benchx.Secs(float64(n)/rate*1e9)),
			Baseline: "—", Ratio: "—", Target: target, Status: benchx.Verdict(rate >= 1000)})
	}
	return rows
}

// HashLargeRows: BenchmarkLargeFile at two file sizes (BENCH_HASH_MB).
func HashLargeRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	type pair struct {
		work, ours, base, baseName, target string
		min                                float64 // 0: no target
	}
	pairs := []pair{
		{"hash large file, sha256", "sha256/File", "sha256/bare-loop", "bare crypto/sha256 loop", "≥ 0.95× bare loop", 0.95},
		{"hash large file, sha256", "sha256/File", "sha256/sha256sum", "sha256sum", "≥ 3× sha256sum", 3},
		{"hash large file, blake3 1 thread", "blake3/File-1thread", "blake3/b3sum-1thread", "b3sum --num-threads 1", "≥ 0.8× b3sum 1 thread", 0.8},
		{"hash large file, blake3 large-file path (parallel)", "blake3/large-path-parallel", "blake3/b3sum-1thread", "b3sum --num-threads 1", "—", 0},
		{"hash 2 large files at once, blake3", "blake3-two-files/File-concurrent", "blake3-two-files/b3sum-default", "b3sum (default threads)", "— (report)", 0},
	}
	count := 1
	if !r.Small() {
		count = 3
	}
	var rows []benchx.Row
	for _, mb := range r.Pick([]int{256, 512}, []int{512, 2048}) {
		size := benchx.MiB(mb)
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/hashing", Bench: "LargeFile$", Count: count,
			Env: []string{fmt.Sprint("BENCH_HASH_MB=", mb)}})
		for _, p := range pairs {
			if err != nil {
				rows = append(rows, benchx.NotRunRow(p.work, size, p.target, err))
				continue
			}
			ours, base := o.Find(p.ours), o.Find(p.base)
			if ours == nil || base == nil {
				rows = append(rows, benchx.NotRunRow(p.work, size, p.target, benchx.Missing(o, "LargeFile")))
				continue
			}
			a, b := ours.Metrics["MB/s"], base.Metrics["MB/s"]
			row := benchx.Row{Workload: p.work, Size: size,
				Bindery:  fmt.Sprintf("%s GB/s (%s)", benchx.Num(a/1000), benchx.Secs(ours.Metrics["ns/op"])),
				Baseline: fmt.Sprintf("%s: %s GB/s", p.baseName, benchx.Num(b/1000)),
				Ratio:    benchx.Ratio(a, b), Target: p.target, Status: benchx.Info}
			if p.min > 0 {
				row.Status = benchx.Verdict(b > 0 && a/b >= p.min)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// HashSmallRows: BenchmarkSmallFiles, the real hash executor (rows,
// batches, commits) over a tree of 4–64 KiB files against
// `find -exec sha256sum {} +` on the same tree, both from a cold page cache
// (evicted) and from a warm one; best of two runs each.
func HashSmallRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const target = "≥ 3× find -exec sha256sum"
	var rows []benchx.Row
	for _, n := range r.Pick([]int{2000, 5000}, []int{10_000, 100_000}) {
		size := benchx.Count(n) + " files"
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/hashing", Bench: "SmallFiles$", Count: 2,
			Env: []string{fmt.Sprint("BENCH_FILES=", n)}})
		for _, state := range []string{"cold", "warm"} {
			for _, alg := range []string{"sha256", "blake3"} {
				work := fmt.Sprintf("hash small files (4–64 KiB), %s, %s page cache", alg, state)
				if err != nil {
					rows = append(rows, benchx.NotRunRow(work, size, target, err))
					continue
				}
				ours, base := o.Find(state+"/executor-"+alg), o.Find(state+"/find-exec-sha256sum")
				if ours == nil || base == nil {
					rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "SmallFiles")))
					continue
				}
				rows = append(rows, smallHashRow(work, size, target, ours, base,
					o.Find(state+"/read-only-16-readers"), o.Find(state+"/read-sha256-16-readers")))
			}
		}
	}
	return rows
}

// smallHashRow compares the executor with find -exec sha256sum. From a cold
// cache both wait on the disk, so the row is a report, with the tree's
// ceilings beside the executor's figure: 16 readers reading only, and 16
// readers reading and hashing without a database.
func smallHashRow(work, size, target string, ours, base, readOnly, readHash *benchx.Result) benchx.Row {
	a, b := ours.Metrics["files/s"], base.Metrics["files/s"]
	row := benchx.Row{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("%s files/s (%s)", benchx.Num(a), benchx.Secs(ours.Metrics["ns/op"])),
		Baseline: fmt.Sprintf("find -exec sha256sum: %s files/s", benchx.Num(b)),
		Ratio:    benchx.Ratio(a, b), Target: target, Status: benchx.Verdict(b > 0 && a/b >= 3)}
	if readOnly != nil && readHash != nil {
		r, h := readOnly.Metrics["files/s"], readHash.Metrics["files/s"]
		row.Bindery = fmt.Sprintf("%s files/s (%s; %s of 16 readers reading only, %s files/s; %s of 16 readers hashing SHA-256 without a database, %s files/s)",
			benchx.Num(a), benchx.Secs(ours.Metrics["ns/op"]), benchx.Ratio(a, r), benchx.Num(r), benchx.Ratio(a, h), benchx.Num(h))
		row.Target, row.Status = "— (disk-bound: report)", benchx.Info
	}
	return row
}
