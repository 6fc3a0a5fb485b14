package micro

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// SameBookRows: "the same book in another container" (issue 38). The
// page-digest pass beside `7zz t -mmt=1` on the same books (the floor of
// decompression), for deflate cbz and non-solid cb7; and the whole report
// of a library where 10 % of the books are repacks, from rows as a scan
// leaves them to complete groups, with the share of books decompressed.
func SameBookRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	rows := pageDigestRows(ctx, r)
	const work, target = "same-book report: rows as a scan leaves them → every same_pages group listed", "measured, with the share decompressed"
	books := r.Pick([]int{500}, []int{10_000})[0]
	size := benchx.Count(books) + " books, 10% repacks"
	o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/hashing", Bench: "SameBookReport$",
		Env: []string{fmt.Sprint("BENCH_SAMEBOOK_BOOKS=", books)}})
	if err != nil {
		return append(rows, benchx.NotRunRow(work, size, target, err))
	}
	res := o.Find("BenchmarkSameBookReport")
	if res == nil {
		return append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "SameBookReport")))
	}
	m := res.Metrics
	return append(rows, benchx.Row{Workload: work, Size: size,
		Bindery: fmt.Sprintf("%s: the hash job %s (its page-digest phase %s), listing the groups %s; %s%% of the books decompressed",
			benchx.Secs(m["ns/op"]), benchx.Secs(m["job-s"]*1e9), benchx.Secs(m["digest-s"]*1e9), benchx.Secs(m["groups-s"]*1e9), benchx.Num(m["decompressed-%"])),
		Baseline: "—", Ratio: "—", Target: target, Status: benchx.Info,
		Note: "warm page cache; the hash job hashes every book too (its passes come first), so the digest phase is the same-book share"})
}

// pageDigestRows: BenchmarkPageDigests, the digest pass beside 7zz t.
func pageDigestRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const target = "≥ 0.8× 7zz t's throughput"
	books := r.Pick([]int{2}, []int{12})[0]
	size := fmt.Sprintf("%d books × 24 pages of 160 KiB", books)
	o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/hashing", Bench: "PageDigests$",
		Env: []string{fmt.Sprint("BENCH_PAGE_BOOKS=", books)}})
	var rows []benchx.Row
	for _, f := range []struct{ ext, what string }{{".cbz", "deflate cbz"}, {".cb7", "non-solid cb7 (LZMA)"}} {
		work := "page digests of candidate books, " + f.what
		if err != nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, err))
			continue
		}
		ours, tool := o.Find("digest"+f.ext), o.Find("7zz_t"+f.ext)
		if ours == nil || tool == nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "PageDigests")))
			continue
		}
		a, b := ours.Metrics["MB/s"], tool.Metrics["MB/s"]
		rows = append(rows, benchx.Row{Workload: work, Size: size, Bindery: benchx.Num(a) + " MB/s", Baseline: "7zz t -mmt=1: " + benchx.Num(b) + " MB/s",
			Ratio: benchx.Ratio(a, b) + " 7zz t", Target: target, Status: benchx.Verdict(b > 0 && a >= 0.8*b)})
	}
	return rows
}
