package bench

import (
	"context"
	"fmt"
)

// sameBookRows: "the same book in another container" (issue 38). The
// page-digest pass beside `7zz t -mmt=1` on the same books (the floor of
// decompression), for deflate cbz and non-solid cb7; and the whole report
// of a library where 10 % of the books are repacks, from rows as a scan
// leaves them to complete groups, with the share of books decompressed.
func sameBookRows(ctx context.Context, r *runner) []Row {
	rows := pageDigestRows(ctx, r)
	const work, target = "same-book report: rows as a scan leaves them → every same_pages group listed", "measured, with the share decompressed"
	books := r.pick([]int{500}, []int{10_000})[0]
	size := count(books) + " books, 10% repacks"
	o, err := r.goBench(ctx, GoBench{Pkg: "./internal/hashing", Bench: "SameBookReport$",
		Env: []string{fmt.Sprint("BENCH_SAMEBOOK_BOOKS=", books)}})
	if err != nil {
		return append(rows, notRun(work, size, target, err))
	}
	res := o.Find("BenchmarkSameBookReport")
	if res == nil {
		return append(rows, notRun(work, size, target, missing(o, "SameBookReport")))
	}
	m := res.Metrics
	return append(rows, Row{Workload: work, Size: size,
		Bindery: fmt.Sprintf("%s: the hash job %s (its page-digest phase %s), listing the groups %s; %s%% of the books decompressed",
			secs(m["ns/op"]), secs(m["job-s"]*1e9), secs(m["digest-s"]*1e9), secs(m["groups-s"]*1e9), num(m["decompressed-%"])),
		Baseline: "—", Ratio: "—", Target: target, Status: Info,
		Note: "warm page cache; the hash job hashes every book too (its passes come first), so the digest phase is the same-book share"})
}

// pageDigestRows: BenchmarkPageDigests, the digest pass beside 7zz t.
func pageDigestRows(ctx context.Context, r *runner) []Row {
	const target = "≥ 0.8× 7zz t's throughput"
	books := r.pick([]int{2}, []int{12})[0]
	size := fmt.Sprintf("%d books × 24 pages of 160 KiB", books)
	o, err := r.goBench(ctx, GoBench{Pkg: "./internal/hashing", Bench: "PageDigests$",
		Env: []string{fmt.Sprint("BENCH_PAGE_BOOKS=", books)}})
	var rows []Row
	for _, f := range []struct{ ext, what string }{{".cbz", "deflate cbz"}, {".cb7", "non-solid cb7 (LZMA)"}} {
		work := "page digests of candidate books, " + f.what
		if err != nil {
			rows = append(rows, notRun(work, size, target, err))
			continue
		}
		ours, tool := o.Find("digest"+f.ext), o.Find("7zz_t"+f.ext)
		if ours == nil || tool == nil {
			rows = append(rows, notRun(work, size, target, missing(o, "PageDigests")))
			continue
		}
		a, b := ours.Metrics["MB/s"], tool.Metrics["MB/s"]
		rows = append(rows, Row{Workload: work, Size: size, Bindery: num(a) + " MB/s", Baseline: "7zz t -mmt=1: " + num(b) + " MB/s",
			Ratio: ratio(a, b) + " 7zz t", Target: target, Status: verdict(b > 0 && a >= 0.8*b)})
	}
	return rows
}
