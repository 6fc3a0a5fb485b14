package micro

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// DupRows: BenchmarkDuplicateReport, the time to a complete duplicate
// report (the hash job's partial digests and candidate pass) beside
// jdupes, rdfind and fdupes on the same tree, cold and warm, with the bytes
// each read from the disk; then the incremental report after 100 files are
// added to the small-file tree, beside a jdupes rerun.
func DupRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const target = "≤ 1.0× jdupes's time"
	trees := []struct {
		kind, what string
		files      int
	}{
		{"comics", "comic-sized files (20–80 MB, 10% copies)", r.Pick([]int{12}, []int{132})[0]},
		{"small", "small files (4–64 KiB, 5% copies)", r.Pick([]int{2000}, []int{100_000})[0]},
	}
	var rows []benchx.Row
	for _, t := range trees {
		size := benchx.Count(t.files) + " files"
		o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/hashing", Bench: "DuplicateReport$", Count: r.Pick([]int{1}, []int{2})[0],
			Env: []string{"BENCH_DUP_TREE=" + t.kind, fmt.Sprint("BENCH_FILES=", t.files)}})
		for _, state := range []string{"cold", "warm"} {
			work := fmt.Sprintf("time to complete duplicate groups, %s, %s page cache", t.what, state)
			if err != nil {
				rows = append(rows, benchx.NotRunRow(work, size, target, err))
				continue
			}
			rows = append(rows, dupRow(o, work, size, target, state))
		}
		if t.kind == "small" {
			rows = append(rows, incrementalRow(o, err, size))
		}
	}
	return rows
}

func dupRow(o *benchx.Outcome, work, size, target, state string) benchx.Row {
	ours, jd := o.Find(state+"/bindery"), o.Find(state+"/jdupes")
	if ours == nil || jd == nil {
		return benchx.NotRunRow(work, size, target, benchx.Missing(o, "DuplicateReport"))
	}
	tool := func(name string) string {
		res := o.Find(state + "/" + name)
		if res == nil {
			return name + ": not run"
		}
		return fmt.Sprintf("%s: %s, %s MB read", name, benchx.Secs(res.Metrics["ns/op"]), benchx.Num(res.Metrics["read-MB"]))
	}
	a, b := ours.Metrics["ns/op"], jd.Metrics["ns/op"]
	return benchx.Row{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("%s, %s MB read", benchx.Secs(a), benchx.Num(ours.Metrics["read-MB"])),
		Baseline: tool("jdupes") + "; " + tool("rdfind") + "; " + tool("fdupes"),
		Ratio:    benchx.Ratio(a, b) + " jdupes's time", Target: target, Status: benchx.Verdict(b > 0 && a <= b),
		Note: "Bindery: the hash job from rows as a scan leaves them until its candidate pass has committed; the scan itself is the rescan/first-scan rows"}
}

func incrementalRow(o *benchx.Outcome, err error, size string) benchx.Row {
	const work, target = "incremental duplicate report: 100 files added (10 copies)", "≥ 20× faster than a jdupes rerun"
	if err != nil {
		return benchx.NotRunRow(work, size, target, err)
	}
	ours, jd := o.Find("incremental/bindery"), o.Find("incremental/jdupes")
	if ours == nil || jd == nil {
		return benchx.NotRunRow(work, size, target, benchx.Missing(o, "DuplicateReport/incremental"))
	}
	a, b := ours.Metrics["ns/op"], jd.Metrics["ns/op"]
	return benchx.Row{Workload: work, Size: size, Bindery: benchx.Secs(a), Baseline: "jdupes -r rerun: " + benchx.Secs(b),
		Ratio: benchx.Ratio(b, a) + " faster", Target: target, Status: benchx.Verdict(a > 0 && b/a >= 20),
		Note: "Bindery: the hash job over the new rows, warm; add the rescan (rescan row) for the time from a scan request"}
}
