package micro

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// Database workloads run in process through internal/store's and
// internal/walmaint's benchmarks: claim→finish cycles against a plain
// SQLite two-transaction cycle, the duplicate groups page with and
// without the summary table, and the writer stall of a WAL checkpoint.

// ClaimRows: BenchmarkClaimFinishThumbnail (the real lease path, 1 and 4
// worker stores) beside BenchmarkPlainSQLiteTwoTx, in one process. The
// benchtime is the cycle count (each run seeds that many rows). The pair
// lives in internal/store/leases.
func ClaimRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "claim→finish thumbnail cycles", "≥ 10,000 cycles/s"
	var rows []benchx.Row
	for _, n := range r.Pick([]int{2000, 5000}, []int{10_000, 50_000}) {
		size := benchx.Count(n) + " rows"
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/store/leases", Bench: "ClaimFinishThumbnail$|PlainSQLiteTwoTx$",
			Benchtime: fmt.Sprintf("%dx", n)})
		if err != nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, err))
			continue
		}
		base := o.Find("BenchmarkPlainSQLiteTwoTx")
		for _, w := range []int{1, 4} {
			work := fmt.Sprintf("%s, %d worker(s)", work, w)
			ours := o.Find(fmt.Sprintf("workers=%d", w))
			if ours == nil || base == nil {
				rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "ClaimFinishThumbnail")))
				continue
			}
			a, b := ours.Metrics["cycles/s"], base.Metrics["cycles/s"]
			rows = append(rows, benchx.Row{Workload: work, Size: size, Bindery: benchx.Num(a) + " cycles/s",
				Baseline: "plain SQLite two-tx cycle: " + benchx.Num(b) + " cycles/s",
				Ratio:    benchx.Ratio(a, b), Target: target, Status: benchx.Verdict(a >= 10_000)})
		}
	}
	return rows
}

// PostgresClaimRows: the same BenchmarkClaimFinishThumbnail on PostgreSQL
// (a private server internal/pgtest starts), with 1, 4 and 16 worker
// stores, beside BenchmarkPlainPostgresTwoTx, the pgbench-style cycle of
// two bare statements over as many pgx connections (issue 22's target is
// at 4 workers).
func PostgresClaimRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work = "claim→finish thumbnail cycles on PostgreSQL"
	var rows []benchx.Row
	for _, n := range r.Pick([]int{2000}, []int{10_000}) {
		size := benchx.Count(n) + " rows"
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/store/leases", Bench: "ClaimFinishThumbnail$|PlainPostgresTwoTx$",
			Benchtime: fmt.Sprintf("%dx", n), Env: []string{"BINDERY_TEST_DB=postgres"}})
		if err != nil {
			rows = append(rows, benchx.NotRunRow(work, size, "≥ 0.8× plain at 4 workers", err))
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
				rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "PlainPostgresTwoTx")))
				continue
			}
			a, b := ours.Metrics["cycles/s"], base.Metrics["cycles/s"]
			row := benchx.Row{Workload: work, Size: size, Bindery: benchx.Num(a) + " cycles/s",
				Baseline: "plain two-statement pgx cycle: " + benchx.Num(b) + " cycles/s",
				Ratio:    benchx.Ratio(a, b), Target: target, Status: benchx.Info}
			if w == 4 {
				row.Status = benchx.Verdict(b > 0 && a/b >= 0.8)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// DuplicateStoreRows: BenchmarkDuplicateGroups, the §6.2 page from random
// anchors through the store (no HTTP), summary table against the plain
// GROUP BY it replaced.
func DuplicateStoreRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "duplicate groups page in process (store)", "p99 < 20 ms"
	var rows []benchx.Row
	for _, n := range r.Pick([]int{20_000, 100_000}, []int{100_000, 1_000_000}) {
		size := benchx.Count(n) + " files, " + benchx.Count(n/5) + " groups"
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/store/duplicates", Bench: "DuplicateGroups$", Benchtime: "100x",
			Env: []string{fmt.Sprint("BENCH_ROWS=", n)}})
		if err != nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, err))
			continue
		}
		ours, base := o.Find("summary=true"), o.Find("summary=false")
		if ours == nil || base == nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "DuplicateGroups")))
			continue
		}
		a, b := ours.Metrics["p99-ms"], base.Metrics["p99-ms"]
		rows = append(rows, benchx.Row{Workload: work, Size: size, Bindery: "summary table: p99 " + benchx.Num(a) + " ms",
			Baseline: "GROUP BY library_files: p99 " + benchx.Num(b) + " ms",
			Ratio:    benchx.Ratio(a, b), Target: target, Status: benchx.Verdict(a < 20)})
	}
	return rows
}

// WALRows: BenchmarkTruncateWriterStall, the longest INSERT stall of a
// concurrent writer while the executor checkpoints a large WAL
// (PASSIVE first, then TRUNCATE) against one direct TRUNCATE.
func WALRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "WAL truncate checkpoint, writer stall", "— (documented, issue 8)"
	var rows []benchx.Row
	for _, mb := range r.Pick([]int{32}, []int{64, 500}) {
		size := fmt.Sprintf("%d MB WAL", mb)
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/walmaint", Bench: "TruncateWriterStall$",
			Env: []string{fmt.Sprint("BINDERY_BENCH_WAL_MB=", mb)}})
		if err != nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, err))
			continue
		}
		ours, base := o.Find(fmt.Sprintf("passive-first/%dMB", mb)), o.Find(fmt.Sprintf("direct/%dMB", mb))
		if ours == nil || base == nil {
			rows = append(rows, benchx.NotRunRow(work, size, target, benchx.Missing(o, "TruncateWriterStall")))
			continue
		}
		rows = append(rows, benchx.Row{Workload: work, Size: size,
			Bindery: fmt.Sprintf("passive then truncate: stall %s ms, checkpoint %s ms",
				benchx.Num(ours.Metrics["stall-ms"]), benchx.Num(ours.Metrics["ckpt-ms"])),
			Baseline: fmt.Sprintf("direct truncate: stall %s ms, checkpoint %s ms",
				benchx.Num(base.Metrics["stall-ms"]), benchx.Num(base.Metrics["ckpt-ms"])),
			Ratio: benchx.Ratio(ours.Metrics["stall-ms"], base.Metrics["stall-ms"]), Target: target, Status: benchx.Info})
	}
	return rows
}

// RescanPostgresRows: the rescan of unchanged files on PostgreSQL against
// the same rescan on SQLite, one after the other in this run (issue 22).
func RescanPostgresRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "rescan unchanged files on PostgreSQL", "≤ 3× SQLite's time"
	n := r.Pick([]int{1000}, []int{100_000})[0]
	size := benchx.Count(n) + " files"
	rescan := func(env ...string) (*benchx.Result, error) {
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/scan", Bench: "RescanUnchanged$/^scan/",
			Env: append([]string{fmt.Sprint("BENCH_FILES=", n)}, env...)})
		if err != nil {
			return nil, err
		}
		if res := o.Find(fmt.Sprintf("scan/files=%d", n)); res != nil {
			return res, nil
		}
		return nil, benchx.Missing(o, "RescanUnchanged")
	}
	sqlite, err := rescan()
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	pg, err := rescan("BINDERY_TEST_DB=postgres")
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err)}
	}
	a, b := pg.Metrics["ns/op"], sqlite.Metrics["ns/op"]
	return []benchx.Row{{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("%s (%s files/s)", benchx.Secs(a), benchx.Num(float64(n)/(a/1e9))),
		Baseline: "the same rescan on SQLite: " + benchx.Secs(b),
		Ratio:    benchx.Ratio(a, b) + " SQLite's time", Target: target, Status: benchx.Verdict(b > 0 && a/b <= 3)}}
}
