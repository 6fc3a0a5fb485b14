// Package bench is the driver behind `make bench`: it generates seeded
// data sets under one temp folder, runs the packages' real benchmarks
// (compiled test binaries) and a loopback load against a real controld,
// measures the tools users compare against in the same run, and reports
// one table of ratios (absolute seconds move with the machine's load,
// ratios much less).
//
// Its packages, by concern (issue 36): internal/benchx is the plumbing
// (Config, Runner, Row and Report, go test -bench runs and parsing,
// formatting); micro holds the workloads that run the packages' own
// Benchmark functions, daemons those that run controld and workerd as
// processes. Both import only benchx; this package lists the workloads
// in the table's order and runs them.
package bench

import (
	"context"

	"github.com/bindery-nas/bindery/internal/bench/daemons"
	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
	"github.com/bindery-nas/bindery/internal/bench/micro"
)

// The driver's types, kept under their old names for cmd/benchd.
type (
	// Scale picks the data-set sizes.
	Scale = benchx.Scale
	// Config is one driver run.
	Config = benchx.Config
	// Status is a row's verdict.
	Status = benchx.Status
	// Row is one line of the report.
	Row = benchx.Row
	// Report is the outcome of a run.
	Report = benchx.Report
	// Machine is what the figures were measured on.
	Machine = benchx.Machine
)

const (
	ScaleSmall = benchx.ScaleSmall
	ScaleFull  = benchx.ScaleFull

	Pass   = benchx.Pass
	Fail   = benchx.Fail
	Info   = benchx.Info
	NotRun = benchx.NotRun
	Error  = benchx.Error
)

// ParseScale accepts "small" and "full".
func ParseScale(s string) (Scale, error) { return benchx.ParseScale(s) }

// workloads is the table, in order. Names are what -only matches.
func workloads() []benchx.Workload {
	return []benchx.Workload{
		{Name: "rescan", Run: micro.RescanRows},
		{Name: "first-scan", Run: micro.FirstScanRows},
		{Name: "hash-large", Run: micro.HashLargeRows},
		{Name: "hash-small", Run: micro.HashSmallRows},
		{Name: "duplicates", Run: micro.DupRows},
		{Name: "visible", Run: daemons.VisibleRows},
		{Name: "covers", Run: micro.CoverRows},
		{Name: "video-covers", Run: micro.VideoCoverRows},
		{Name: "claim", Run: micro.ClaimRows},
		{Name: "claim-postgres", Run: micro.PostgresClaimRows},
		{Name: "rescan-postgres", Run: micro.RescanPostgresRows},
		{Name: "api", Run: daemons.APIRows},
		{Name: "api-postgres", Run: daemons.APIPostgresRows},
		{Name: "duplicates-store", Run: micro.DuplicateStoreRows},
		{Name: "wal", Run: micro.WALRows},
		{Name: "resolve", Run: micro.ResolveRows},
		{Name: "first-run", Run: daemons.FirstRunRows},
		{Name: "samebook", Run: micro.SameBookRows},
		{Name: "scale", Run: daemons.ScaleRows},
	}
}

// WorkloadNames are the workloads' names, in order (what -only matches).
func WorkloadNames() []string {
	var out []string
	for _, w := range workloads() {
		out = append(out, w.Name)
	}
	return out
}

// Run runs every workload of cfg.Scale and returns the report. A
// workload whose benchmark skipped (a tool is missing) yields "not run"
// rows, one that fails or is missing from the output (moved, renamed)
// error rows; the error returned is kept for what stops the whole run (no
// module root, no temp space).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	return benchx.Run(ctx, cfg, workloads())
}

// ReadMachine reads /proc and the tools' versions; missing pieces stay "".
func ReadMachine(ctx context.Context) Machine { return benchx.ReadMachine(ctx) }
