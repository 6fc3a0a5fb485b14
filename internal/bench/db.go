package bench

import (
	"context"
	"fmt"
)

// Database workloads run in process through internal/store's and
// internal/walmaint's benchmarks: claim→finish cycles against a plain
// SQLite two-transaction cycle, the duplicate groups page with and
// without the summary table, and the writer stall of a WAL checkpoint.

// claimRows: BenchmarkClaimFinishThumbnail (the real lease path, 1 and 4
// worker stores) beside BenchmarkPlainSQLiteTwoTx, in one process. The
// benchtime is the cycle count (each run seeds that many rows). The pair
// lives in internal/store/leases.
func claimRows(ctx context.Context, r *runner) []Row {
	const work, target = "claim→finish thumbnail cycles", "≥ 10,000 cycles/s"
	var rows []Row
	for _, n := range r.pick([]int{2000, 5000}, []int{10_000, 50_000}) {
		size := count(n) + " rows"
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/store/leases", Bench: "ClaimFinishThumbnail$|PlainSQLiteTwoTx$",
			Benchtime: fmt.Sprintf("%dx", n)})
		if err != nil {
			rows = append(rows, notRun(work, size, target, err))
			continue
		}
		base := o.Find("BenchmarkPlainSQLiteTwoTx")
		for _, w := range []int{1, 4} {
			work := fmt.Sprintf("%s, %d worker(s)", work, w)
			ours := o.Find(fmt.Sprintf("workers=%d", w))
			if ours == nil || base == nil {
				rows = append(rows, notRun(work, size, target, missing(o, "ClaimFinishThumbnail")))
				continue
			}
			a, b := ours.Metrics["cycles/s"], base.Metrics["cycles/s"]
			rows = append(rows, Row{Workload: work, Size: size, Bindery: num(a) + " cycles/s",
				Baseline: "plain SQLite two-tx cycle: " + num(b) + " cycles/s",
				Ratio:    ratio(a, b), Target: target, Status: verdict(a >= 10_000)})
		}
	}
	return rows
}

// postgresClaimRows: the same BenchmarkClaimFinishThumbnail on PostgreSQL
// (a private server internal/pgtest starts), with 1, 4 and 16 worker
// stores, beside BenchmarkPlainPostgresTwoTx, the pgbench-style cycle of
// two bare statements over as many pgx connections (issue 22's target is
// at 4 workers).
func postgresClaimRows(ctx context.Context, r *runner) []Row {
	const work = "claim→finish thumbnail cycles on PostgreSQL"
	var rows []Row
	for _, n := range r.pick([]int{2000}, []int{10_000}) {
		size := count(n) + " rows"
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/store/leases", Bench: "ClaimFinishThumbnail$|PlainPostgresTwoTx$",
			Benchtime: fmt.Sprintf("%dx", n), Env: []string{"BINDERY_TEST_DB=postgres"}})
		if err != nil {
			rows = append(rows, notRun(work, size, "≥ 0.8× plain at 4 workers", err))
			continue
		}
		for _, w := range []int{1, 4, 16} {
			work, target := fmt.Sprintf("%s, %d worker(s)", work, w), "— (reported)"
			if w == 4 {
				target = "≥ 0.8× plain"
			}
			sub := fmt.Sprintf("/workers=%d", w)
			ours, base := o.Find("BenchmarkClaimFinishThumbnail"+sub), o.Find("BenchmarkPlainPostgresTwoTx"+sub)
			if ours == nil || base == nil {
				rows = append(rows, notRun(work, size, target, missing(o, "PlainPostgresTwoTx")))
				continue
			}
			a, b := ours.Metrics["cycles/s"], base.Metrics["cycles/s"]
			row := Row{Workload: work, Size: size, Bindery: num(a) + " cycles/s",
				Baseline: "plain two-statement pgx cycle: " + num(b) + " cycles/s",
				Ratio:    ratio(a, b), Target: target, Status: Info}
			if w == 4 {
				row.Status = verdict(b > 0 && a/b >= 0.8)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// duplicateStoreRows: BenchmarkDuplicateGroups, the §6.2 page from random
// anchors through the store (no HTTP), summary table against the plain
// GROUP BY it replaced.
func duplicateStoreRows(ctx context.Context, r *runner) []Row {
	const work, target = "duplicate groups page in process (store)", "p99 < 20 ms"
	var rows []Row
	for _, n := range r.pick([]int{20_000, 100_000}, []int{100_000, 1_000_000}) {
		size := count(n) + " files, " + count(n/5) + " groups"
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/store/duplicates", Bench: "DuplicateGroups$", Benchtime: "100x",
			Env: []string{fmt.Sprint("BENCH_ROWS=", n)}})
		if err != nil {
			rows = append(rows, notRun(work, size, target, err))
			continue
		}
		ours, base := o.Find("summary=true"), o.Find("summary=false")
		if ours == nil || base == nil {
			rows = append(rows, notRun(work, size, target, missing(o, "DuplicateGroups")))
			continue
		}
		a, b := ours.Metrics["p99-ms"], base.Metrics["p99-ms"]
		rows = append(rows, Row{Workload: work, Size: size, Bindery: "summary table: p99 " + num(a) + " ms",
			Baseline: "GROUP BY library_files: p99 " + num(b) + " ms",
			Ratio:    ratio(a, b), Target: target, Status: verdict(a < 20)})
	}
	return rows
}

// walRows: BenchmarkTruncateWriterStall, the longest INSERT stall of a
// concurrent writer while the executor checkpoints a large WAL
// (PASSIVE first, then TRUNCATE) against one direct TRUNCATE.
func walRows(ctx context.Context, r *runner) []Row {
	const work, target = "WAL truncate checkpoint, writer stall", "— (documented, issue 8)"
	var rows []Row
	for _, mb := range r.pick([]int{32}, []int{64, 500}) {
		size := fmt.Sprintf("%d MB WAL", mb)
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/walmaint", Bench: "TruncateWriterStall$",
			Env: []string{fmt.Sprint("BINDERY_BENCH_WAL_MB=", mb)}})
		if err != nil {
			rows = append(rows, notRun(work, size, target, err))
			continue
		}
		ours, base := o.Find(fmt.Sprintf("passive-first/%dMB", mb)), o.Find(fmt.Sprintf("direct/%dMB", mb))
		if ours == nil || base == nil {
			rows = append(rows, notRun(work, size, target, missing(o, "TruncateWriterStall")))
			continue
		}
		rows = append(rows, Row{Workload: work, Size: size,
			Bindery: fmt.Sprintf("passive then truncate: stall %s ms, checkpoint %s ms",
				num(ours.Metrics["stall-ms"]), num(ours.Metrics["ckpt-ms"])),
			Baseline: fmt.Sprintf("direct truncate: stall %s ms, checkpoint %s ms",
				num(base.Metrics["stall-ms"]), num(base.Metrics["ckpt-ms"])),
			Ratio: ratio(ours.Metrics["stall-ms"], base.Metrics["stall-ms"]), Target: target, Status: Info})
	}
	return rows
}

// rescanPostgresRows: the rescan of unchanged files on PostgreSQL against
// the same rescan on SQLite, one after the other in this run (issue 22).
func rescanPostgresRows(ctx context.Context, r *runner) []Row {
	const work, target = "rescan unchanged files on PostgreSQL", "≤ 3× SQLite's time"
	n := r.pick([]int{1000}, []int{100_000})[0]
	size := count(n) + " files"
	rescan := func(env ...string) (*Result, error) {
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/scan", Bench: "RescanUnchanged$/^scan/",
			Env: append([]string{fmt.Sprint("BENCH_FILES=", n)}, env...)})
		if err != nil {
			return nil, err
		}
		if res := o.Find(fmt.Sprintf("scan/files=%d", n)); res != nil {
			return res, nil
		}
		return nil, missing(o, "RescanUnchanged")
	}
	sqlite, err := rescan()
	if err != nil {
		return []Row{notRun(work, size, target, err)}
	}
	pg, err := rescan("BINDERY_TEST_DB=postgres")
	if err != nil {
		return []Row{notRun(work, size, target, err)}
	}
	a, b := pg.Metrics["ns/op"], sqlite.Metrics["ns/op"]
	return []Row{{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("%s (%s files/s)", secs(a), num(float64(n)/(a/1e9))),
		Baseline: "the same rescan on SQLite: " + secs(b),
		Ratio:    ratio(a, b) + " SQLite's time", Target: target, Status: verdict(b > 0 && a/b <= 3)}}
}
