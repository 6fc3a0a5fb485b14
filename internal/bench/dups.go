package bench

import (
	"context"
	"fmt"
)

// dupRows: BenchmarkDuplicateReport, the time to a complete duplicate
// report (the hash job's partial digests and candidate pass) beside
// jdupes, rdfind and fdupes on the same tree, cold and warm, with the bytes
// each read from the disk; then the incremental report after 100 files are
// added to the small-file tree, beside a jdupes rerun.
func dupRows(ctx context.Context, r *runner) []Row {
	const target = "≤ 1.0× jdupes's time"
	trees := []struct {
		kind, what string
		files      int
	}{
		{"comics", "comic-sized files (20–80 MB, 10% copies)", r.pick([]int{12}, []int{132})[0]},
		{"small", "small files (4–64 KiB, 5% copies)", r.pick([]int{2000}, []int{100_000})[0]},
	}
	var rows []Row
	for _, t := range trees {
		size := count(t.files) + " files"
		o, err := r.goBench(ctx, GoBench{Pkg: "./internal/hashing", Bench: "DuplicateReport$", Count: r.pick([]int{1}, []int{2})[0],
			Env: []string{"BENCH_DUP_TREE=" + t.kind, fmt.Sprint("BENCH_FILES=", t.files)}})
		for _, state := range []string{"cold", "warm"} {
			work := fmt.Sprintf("time to complete duplicate groups, %s, %s page cache", t.what, state)
			if err != nil {
				rows = append(rows, notRun(work, size, target, err))
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

func dupRow(o *Outcome, work, size, target, state string) Row {
	ours, jd := o.Find(state+"/bindery"), o.Find(state+"/jdupes")
	if ours == nil || jd == nil {
		return notRun(work, size, target, missing(o, "DuplicateReport"))
	}
	tool := func(name string) string {
		res := o.Find(state + "/" + name)
		if res == nil {
			return name + ": not run"
		}
		return fmt.Sprintf("%s: %s, %s MB read", name, secs(res.Metrics["ns/op"]), num(res.Metrics["read-MB"]))
	}
	a, b := ours.Metrics["ns/op"], jd.Metrics["ns/op"]
	return Row{Workload: work, Size: size,
		Bindery:  fmt.Sprintf("%s, %s MB read", secs(a), num(ours.Metrics["read-MB"])),
		Baseline: tool("jdupes") + "; " + tool("rdfind") + "; " + tool("fdupes"),
		Ratio:    ratio(a, b) + " jdupes's time", Target: target, Status: verdict(b > 0 && a <= b),
		Note: "Bindery: the hash job from rows as a scan leaves them until its candidate pass has committed; the scan itself is the rescan/first-scan rows"}
}

func incrementalRow(o *Outcome, err error, size string) Row {
	const work, target = "incremental duplicate report: 100 files added (10 copies)", "≥ 20× faster than a jdupes rerun"
	if err != nil {
		return notRun(work, size, target, err)
	}
	ours, jd := o.Find("incremental/bindery"), o.Find("incremental/jdupes")
	if ours == nil || jd == nil {
		return notRun(work, size, target, missing(o, "DuplicateReport/incremental"))
	}
	a, b := ours.Metrics["ns/op"], jd.Metrics["ns/op"]
	return Row{Workload: work, Size: size, Bindery: secs(a), Baseline: "jdupes -r rerun: " + secs(b),
		Ratio: ratio(b, a) + " faster", Target: target, Status: verdict(a > 0 && b/a >= 20),
		Note: "Bindery: the hash job over the new rows, warm; add the rescan (rescan row) for the time from a scan request"}
}
