package bench

import (
	"context"
	"fmt"
)

// Scan and hash workloads: internal/scan's and internal/hashing's
// benchmarks at two or three sizes each, so the table shows whether cost
// grows linearly.

func (r *runner) pick(small, full []int) []int {
	sizes := full
	if r.small() {
		sizes = small
	}
	if r.cfg.OneSize {
		return sizes[:1]
	}
	return sizes
}

// rescanRows: BenchmarkRescanUnchanged (the real scan executor on a
// generated tree of cbz files, flat and nested) beside `find -printf` on
// the same tree; also the test process's peak RSS per size.
func rescanRows(ctx context.Context, r *runner) []Row {
	const work, target = "rescan unchanged files", "≤ 3 s per 100k files (≥ 33,333 files/s)"
	const rssWork, rssTarget = "peak RSS: scan (process VmHWM, first scan + rescan)", "≤ 150 MB at 100k, flat"
	var rows, rss []Row
	for _, n := range r.pick([]int{1000, 3000}, []int{10_000, 50_000, 100_000}) {
		size := count(n) + " files"
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/scan", Bench: "RescanUnchanged$",
			Env: []string{fmt.Sprint("BENCH_FILES=", n)}})
		if err != nil {
			rows = append(rows, notRun(work, size, target, err))
			continue
		}
		scan, find := o.Find(fmt.Sprintf("scan/files=%d", n)), o.Find(fmt.Sprintf("find/files=%d", n))
		if scan == nil || find == nil {
			rows = append(rows, notRun(work, size, target, missing(o, "RescanUnchanged")))
			continue
		}
		rate := float64(n) / (scan.Metrics["ns/op"] / 1e9)
		rows = append(rows, Row{Workload: work, Size: size,
			Bindery:  fmt.Sprintf("%s (%s files/s)", secs(scan.Metrics["ns/op"]), num(rate)),
			Baseline: "find -printf: " + secs(find.Metrics["ns/op"]),
			Ratio:    ratio(scan.Metrics["ns/op"], find.Metrics["ns/op"]) + " find's time",
			Target:   target, Status: verdict(rate >= 100_000/3.0)})
		mb, ok := scan.Metrics["peak-RSS-MB"]
		if !ok {
			mb = o.MaxRSSMB
		}
		row := Row{Workload: rssWork, Size: size, Bindery: num(mb) + " MB", Baseline: "—", Ratio: "—",
			Target: rssTarget, Status: Info}
		if n >= 100_000 {
			row.Status = verdict(mb <= 150)
		}
		rss = append(rss, row)
	}
	return append(rows, rss...)
}

// firstScanRows: BenchmarkFirstScanCBZ, files/s of a first scan of small
// cbz files with ComicInfo.xml.
func firstScanRows(ctx context.Context, r *runner) []Row {
	const work, target = "first scan, cbz with ComicInfo", "≥ 1,000 files/s"
	var rows []Row
	for _, n := range r.pick([]int{500, 1000}, []int{2000, 10_000}) {
		size := count(n) + " files"
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/scan", Bench: "FirstScanCBZ$",
			Env: []string{fmt.Sprint("BENCH_FILES=", n)}})
		if err != nil {
			rows = append(rows, notRun(work, size, target, err))
			continue
		}
		res := o.Find("BenchmarkFirstScanCBZ")
		if res == nil {
			rows = append(rows, notRun(work, size, target, missing(o, "FirstScanCBZ")))
			continue
		}
		rate := res.Metrics["files/s"]
		rows = append(rows, Row{Workload: work, Size: size,
			Bindery:  fmt.Sprintf("%s files/s (%s)", num(rate), secs(float64(n)/rate*1e9)),
			Baseline: "—", Ratio: "—", Target: target, Status: verdict(rate >= 1000)})
	}
	return rows
}

// hashLargeRows: BenchmarkLargeFile at two file sizes (BENCH_HASH_MB).
func hashLargeRows(ctx context.Context, r *runner) []Row {
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
	if !r.small() {
		count = 3
	}
	var rows []Row
	for _, mb := range r.pick([]int{256, 512}, []int{512, 2048}) {
		size := mib(mb)
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/hashing", Bench: "LargeFile$", Count: count,
			Env: []string{fmt.Sprint("BENCH_HASH_MB=", mb)}})
		for _, p := range pairs {
			if err != nil {
				rows = append(rows, notRun(p.work, size, p.target, err))
				continue
			}
			ours, base := o.Find(p.ours), o.Find(p.base)
			if ours == nil || base == nil {
				rows = append(rows, notRun(p.work, size, p.target, missing(o, "LargeFile")))
				continue
			}
			a, b := ours.Metrics["MB/s"], base.Metrics["MB/s"]
			row := Row{Workload: p.work, Size: size,
				Bindery:  fmt.Sprintf("%s GB/s (%s)", num(a/1000), secs(ours.Metrics["ns/op"])),
				Baseline: fmt.Sprintf("%s: %s GB/s", p.baseName, num(b/1000)),
				Ratio:    ratio(a, b), Target: p.target, Status: Info}
			if p.min > 0 {
				row.Status = verdict(b > 0 && a/b >= p.min)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// hashSmallRows: BenchmarkSmallFiles, the real hash executor (rows,
// batches, commits) over a tree of 4–64 KiB files against
// `find -exec sha256sum {} +` on the same tree, both from a cold page cache
// (evicted) and from a warm one; best of two runs each.
func hashSmallRows(ctx context.Context, r *runner) []Row {
	const target = "≥ 3× find -exec sha256sum"
	var rows []Row
	for _, n := range r.pick([]int{2000, 5000}, []int{10_000, 100_000}) {
		size := count(n) + " files"
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/hashing", Bench: "SmallFiles$", Count: 2,
			Env: []string{fmt.Sprint("BENCH_FILES=", n)}})
		for _, state := range []string{"cold", "warm"} {
			for _, alg := range []string{"sha256", "blake3"} {
				work := fmt.Sprintf("hash small files (4–64 KiB), %s, %s page cache", alg, state)
				if err != nil {
					rows = append(rows, notRun(work, size, target, err))
					continue
				}
				ours, base := o.Find(state+"/executor-"+alg), o.Find(state+"/find-exec-sha256sum")
				if ours == nil || base == nil {
					rows = append(rows, notRun(work, size, target, missing(o, "SmallFiles")))
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
func smallHashRow(work, size, target string, ours, base, readOnly, readHash *Result) Row {
	a, b := ours.Metrics["files/s"], base.Metrics["files/s"]
	row := Row{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("%s files/s (%s)", num(a), secs(ours.Metrics["ns/op"])),
		Baseline: fmt.Sprintf("find -exec sha256sum: %s files/s", num(b)),
		Ratio:    ratio(a, b), Target: target, Status: verdict(b > 0 && a/b >= 3)}
	if readOnly != nil && readHash != nil {
		r, h := readOnly.Metrics["files/s"], readHash.Metrics["files/s"]
		row.Bindery = fmt.Sprintf("%s files/s (%s; %s of 16 readers reading only, %s files/s; %s of 16 readers hashing SHA-256 without a database, %s files/s)",
			num(a), secs(ours.Metrics["ns/op"]), ratio(a, r), num(r), ratio(a, h), num(h))
		row.Target, row.Status = "— (disk-bound: report)", Info
	}
	return row
}
