package micro

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// ResolveRows: a delete job carrying out a plan (every copy and its keeper
// re-hashed from open files, moved by no-replace rename into the trash,
// proven there, intents and outcomes committed and folders synced per
// batch) beside `jdupes -r -d -N` on the same tree, which deletes without
// checking anything again (internal/trash's BenchmarkResolve).
func ResolveRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	work := []struct{ name, size, target string }{
		{"small", "500 groups of two 64 KiB copies", "≥ 0.5× jdupes -d"},
		{"large", "50 groups of two 50 MB copies", "≥ 0.9× jdupes -d (both read-bound)"},
	}
	if r.Small() {
		work[1].size = "4 groups of two 50 MB copies"
	}
	o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/trash", Bench: "Resolve$"})
	var rows []benchx.Row
	for _, w := range work {
		label := "resolving duplicates (delete job), " + w.name + " copies"
		if err != nil && (o == nil || len(o.Results) == 0) {
			rows = append(rows, benchx.NotRunRow(label, w.size, w.target, err))
			continue
		}
		ours, jd := o.Find("BenchmarkResolve/"+w.name+"/bindery"), o.Find("BenchmarkResolve/"+w.name+"/jdupes")
		if ours == nil || jd == nil {
			rows = append(rows, benchx.NotRunRow(label, w.size, w.target, benchx.Missing(o, "Resolve/"+w.name)))
			continue
		}
		a, b := ours.Metrics["copies/s"], jd.Metrics["copies/s"]
		want := 0.5
		if w.name == "large" {
			want = 0.9
		}
		rows = append(rows, benchx.Row{Workload: label, Size: w.size,
			Bindery:  fmt.Sprintf("%s copies/s", benchx.Num(a)),
			Baseline: fmt.Sprintf("jdupes -r -d -N: %s copies/s", benchx.Num(b)),
			Ratio:    benchx.Ratio(a, b), Target: w.target, Status: benchx.Verdict(b > 0 && a/b >= want)})
	}
	return rows
}
