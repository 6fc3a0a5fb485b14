package micro

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
)

// VideoCoverRows: internal/thumbs' BenchmarkCoversVideo in its own
// process (it makes its own corpus, one h264 MP4 copied per file):
// Bindery's renderer with 2 concurrent renders beside ffmpegthumbnailer,
// one process per file, 2 at a time; and the peak RSS of each side.
func VideoCoverRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const (
		target    = "≥ 1.0× ffmpegthumbnailer"
		rssWork   = "peak RSS: video covers, 2 concurrent renders"
		rssTarget = "— (report)"
	)
	work, size := "JPEG covers 320 wide from 1080p h264 MP4 (1 min, keyframe every 10 s), 2 concurrent renders", "50 files"
	if r.Small() {
		work, size = "JPEG covers 320 wide from 320×240 h264 MP4 (4 s), 2 concurrent renders", "3 files"
	}
	// A frame costs a process start on either side, so the machine's other
	// load moves both figures a lot: full scale keeps the best of 3.
	o, err := r.Bench(ctx, benchx.GoBench{Pkg: "./internal/thumbs", Bench: "CoversVideo$", Count: r.Pick([]int{1}, []int{3})[0]})
	if err != nil && (o == nil || len(o.Results) == 0) {
		return []benchx.Row{benchx.NotRunRow(work, size, target, err), benchx.NotRunRow(rssWork, size, rssTarget, err)}
	}
	var rows []benchx.Row
	ours, ft := o.Find("BenchmarkCoversVideo/bindery/workers=2"), o.Find("BenchmarkCoversVideo/ffmpegthumbnailer")
	switch {
	case ours == nil:
		rows = []benchx.Row{benchx.NotRunRow(work, size, target, benchx.Missing(o, "CoversVideo")), benchx.NotRunRow(rssWork, size, rssTarget, benchx.Missing(o, "CoversVideo"))}
	case ft == nil:
		miss := benchx.Missing(o, "CoversVideo/ffmpegthumbnailer")
		rows = []benchx.Row{benchx.NotRunRow(work, size, target, miss), benchx.NotRunRow(rssWork, size, rssTarget, miss)}
	default:
		a, b := ours.Metrics["covers/s"], ft.Metrics["covers/s"]
		proc, ff, th := ours.Metrics["peak-RSS-MB"], ours.Metrics["ffmpeg-peak-RSS-MB"], ft.Metrics["peak-RSS-MB"]
		rows = []benchx.Row{{Workload: work, Size: size,
			Bindery: fmt.Sprintf("%s covers/s (%s CPU-ms/cover with its ffmpeg runs)", benchx.Num(a), benchx.Num(ours.Metrics["cpu-ms/cover"])),
			Baseline: fmt.Sprintf("ffmpegthumbnailer -s 320 -t 10%%, one process per file, 2 at a time: %s covers/s (%s CPU-ms/cover)",
				benchx.Num(b), benchx.Num(ft.Metrics["cpu-ms/cover"])),
			Ratio: benchx.Ratio(a, b), Target: target, Status: benchx.Verdict(b > 0 && a/b >= 1.0)},
			{Workload: rssWork, Size: size,
				Bindery:  fmt.Sprintf("%s MB process (child VmHWM) + %s MB per ffmpeg run (largest)", benchx.Num(proc), benchx.Num(ff)),
				Baseline: fmt.Sprintf("ffmpegthumbnailer: %s MB per process (largest)", benchx.Num(th)),
				Ratio:    benchx.Ratio(ff, th) + " per frame process", Target: rssTarget, Status: benchx.Info}}
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
