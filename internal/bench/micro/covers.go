package micro

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// CoverRows: internal/thumbs' cover benchmarks in one process (they share
// one generated corpus of 3000×4000 noise JPEGs and books made of them):
// Bindery's pipeline beside one vipsthumbnail process, covers from pages
// inside each archive format, and the peak RSS of a child doing two
// concurrent 6000×8000 renders.
func CoverRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const (
		jpegWork   = "covers from 3000×4000 JPEG"
		jpegTarget = "≥ 0.9× vipsthumbnail"
		rssWork    = "peak RSS: 2 concurrent 6000×8000 renders"
		rssTarget  = "≤ 300 MB"
	)
	size := "100 pages"
	o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/thumbs", Bench: "CoversJPEG$|CoversArchive$|CoverPeakRSS$"})
	if err != nil && (o == nil || len(o.Results) == 0) {
		return []benchx.Row{benchx.NotRunRow(jpegWork, size, jpegTarget, err), benchx.NotRunRow("covers from archive pages", "", "—", err),
			benchx.NotRunRow(rssWork, "", rssTarget, err)}
	}
	var rows []benchx.Row
	vt := o.Find("BenchmarkCoversJPEG/vipsthumbnail")
	for _, w := range []int{2, 1} {
		name := fmt.Sprintf("bindery/workers=%d", w)
		ours := o.Find(name)
		work := fmt.Sprintf("%s, %d concurrent renders", jpegWork, w)
		if ours == nil || vt == nil {
			rows = append(rows, benchx.NotRunRow(work, size, jpegTarget, benchx.Missing(o, "CoversJPEG")))
			continue
		}
		a, b := ours.Metrics["covers/s"], vt.Metrics["covers/s"]
		row := benchx.Row{Workload: work, Size: size,
			Bindery:  fmt.Sprintf("%s covers/s (%s encodes/cover)", benchx.Num(a), benchx.Num(ours.Metrics["encodes/cover"])),
			Baseline: fmt.Sprintf("vipsthumbnail -s 320x, all files, all cores: %s covers/s", benchx.Num(b)),
			Ratio:    benchx.Ratio(a, b), Target: jpegTarget, Status: benchx.Verdict(b > 0 && a/b >= 0.9)}
		if w == 1 {
			row.Target, row.Status = "— (one core against two)", benchx.Info
		}
		rows = append(rows, row)
	}
	for _, kind := range []string{"cbz", "cbr", "cb7", "solid.cb7"} {
		work := "covers from pages inside ." + kind
		res := o.Find("BenchmarkCoversArchive/" + kind)
		if res == nil {
			rows = append(rows, benchx.NotRunRow(work, "20 books", "—", benchx.Missing(o, "CoversArchive/"+kind)))
			continue
		}
		rows = append(rows, benchx.Row{Workload: work, Size: "20 books, 2 renders",
			Bindery: benchx.Num(res.Metrics["covers/s"]) + " covers/s", Baseline: "—", Ratio: "—", Target: "— (report)", Status: benchx.Info})
	}
	if res := o.Find("BenchmarkCoverPeakRSS"); res != nil {
		mb := res.Metrics["peak-RSS-MB"]
		rows = append(rows, benchx.Row{Workload: rssWork, Size: "3 rounds", Bindery: benchx.Num(mb) + " MB (child VmHWM)",
			Baseline: "—", Ratio: "—", Target: rssTarget, Status: benchx.Verdict(mb <= 300)})
	} else {
		rows = append(rows, benchx.NotRunRow(rssWork, "", rssTarget, benchx.Missing(o, "CoverPeakRSS")))
	}
	if err != nil {
		for i := range rows {
			if rows[i].Status == benchx.NotRun {
				rows[i].Status, rows[i].Note = benchx.Error, err.Error()
			}
		}
	}
	return rows
}
