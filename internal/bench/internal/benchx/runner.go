// Package benchx is the plumbing of the bench driver (internal/bench):
// the run's Config and Runner, the report's rows and rendering, compiling
// and running the packages' Benchmark functions and parsing their output,
// and the figures' formatting. The workload packages (internal/bench/micro,
// internal/bench/daemons) import only this one of the driver's packages.
package benchx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// Scale picks the data-set sizes.
type Scale string

const (
	// ScaleSmall is the smoke set: every workload at reduced sizes, a few
	// minutes in all.
	ScaleSmall Scale = "small"
	// ScaleFull is the set: 100k-file trees, 2 GiB files, 1M-row DB.
	ScaleFull Scale = "full"
)

// ParseScale accepts "small" and "full".
func ParseScale(s string) (Scale, error) {
	switch Scale(s) {
	case ScaleSmall, ScaleFull:
		return Scale(s), nil
	}
	return "", fmt.Errorf("bench scale %q: want small or full", s)
}

// Config is one driver run.
type Config struct {
	// Scale picks the sizes; default ScaleSmall.
	Scale Scale
	// Root is the module root (holds go.mod); default: found from the
	// working directory.
	Root string
	// DataDir is where the run's own folder (generated data sets,
	// binaries) is made; default os.TempDir(). That folder is removed at the
	// end unless Keep; DataDir itself is never removed.
	DataDir string
	// Keep leaves the run's folder in place (default false).
	Keep bool
	// Cache, when set, is the TMPDIR of the benchmarks instead of a folder
	// inside DataDir: the corpora they cache there (cover JPEGs, hash
	// files) survive the run, for quicker repeated runs. Default "".
	Cache string
	// Only runs the workloads whose name matches (default all).
	Only *regexp.Regexp
	// OneSize runs each workload at the first size of its scale only:
	// make test's smoke, which asks whether every workload runs, not how
	// its cost grows.
	OneSize bool
	// Log receives progress lines; default io.Discard.
	Log io.Writer
}

// Status is a row's verdict.
type Status string

const (
	Pass   Status = "pass"
	Fail   Status = "FAIL"
	Info   Status = "info"    // no target: the figure is reported
	NotRun Status = "not run" // the benchmark skipped (a tool is missing)
	Error  Status = "error"   // the benchmark failed to build or run: a bug
)

// Row is one line of the report.
type Row struct {
	Workload string
	Size     string
	Bindery  string
	Baseline string
	Ratio    string
	Target   string
	Status   Status
	// Note says why a row did not run, or how a figure was taken.
	Note string
}

// Report is the outcome of a run.
type Report struct {
	Scale    Scale
	Started  time.Time
	Elapsed  time.Duration
	Machine  Machine
	Rows     []Row
	Commands []string
}

// Workload is one line group of the table.
type Workload struct {
	// Name is what -only matches.
	Name string
	Run  func(ctx context.Context, r *Runner) []Row
}

// Runner is what workloads share during a run.
type Runner struct {
	Cfg  Config
	Bins *Binaries
	Tmp  string // TMPDIR given to benchmarks
	Data string // the run's own folder: generated data sets go below it
	Logf func(format string, args ...any)
}

// Run runs workloads (those cfg.Only matches) at cfg.Scale and returns the report. A
// workload whose benchmark skipped (a tool is missing) yields "not run"
// rows, one that fails or is missing from the output (moved, renamed)
// error rows; the error returned is kept for what stops the whole run (no
// module root, no temp space).
func Run(ctx context.Context, cfg Config, workloads []Workload) (*Report, error) {
	if cfg.Scale == "" {
		cfg.Scale = ScaleSmall
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Root == "" {
		root, err := testutil.ModuleRoot()
		if err != nil {
			return nil, err
		}
		cfg.Root = root
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: data dir: %w", err)
		}
	}
	data, err := os.MkdirTemp(cfg.DataDir, "bindery-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: data dir: %w", err)
	}
	if cfg.Keep {
		fmt.Fprintf(cfg.Log, "bench: keeping %s\n", data)
	} else {
		defer os.RemoveAll(data)
	}
	r := &Runner{Cfg: cfg, Data: data, Tmp: filepath.Join(data, "tmp")}
	if cfg.Cache != "" {
		r.Tmp = cfg.Cache
	}
	r.Logf = func(format string, args ...any) {
		fmt.Fprintf(cfg.Log, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	r.Bins = NewBinaries(cfg.Root, filepath.Join(data, "bin"), r.Logf)
	for _, d := range []string{r.Tmp, r.Bins.dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	rep := &Report{Scale: cfg.Scale, Started: time.Now(), Machine: ReadMachine(ctx)}
	for _, w := range workloads {
		if cfg.Only != nil && !cfg.Only.MatchString(w.Name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		start := time.Now()
		rep.Rows = append(rep.Rows, w.Run(ctx, r)...)
		r.Logf("%s done in %s", w.Name, time.Since(start).Round(100*time.Millisecond))
	}
	rep.Elapsed = time.Since(rep.Started)
	rep.Machine.LoadEnd = loadAvg()
	rep.Commands = reproduce(cfg.Scale)
	return rep, nil
}

// Small reports whether the run is at the small scale.
func (r *Runner) Small() bool { return r.Cfg.Scale == ScaleSmall }

// Bench runs g and reports the error as the row note when it fails.
func (r *Runner) Bench(ctx context.Context, g GoBench) (*Outcome, error) {
	g.Env = append([]string{"BENCH_SCALE=" + string(r.Cfg.Scale)}, g.Env...)
	return r.Bins.run(ctx, g, r.Tmp)
}

// ErrMissing marks a result absent from a run that otherwise worked.
var ErrMissing = errors.New("not in the output")

// NotRunRow is a row without a figure: NotRun when err is ErrMissing (the
// benchmark skipped), Error otherwise.
func NotRunRow(workload, size, target string, err error) Row {
	st := Error
	if errors.Is(err, ErrMissing) {
		st = NotRun
	}
	return Row{Workload: workload, Size: size, Target: target, Status: st, Note: err.Error()}
}

func reproduce(s Scale) []string {
	return []string{
		"make bench         # go run ./cmd/benchd -scale full -write docs/PERFORMANCE.md   (up to 30 minutes)",
		"make bench-smoke   # go run ./cmd/benchd -scale small -one-size   (a few minutes, no timing assertion)",
		fmt.Sprintf("go run ./cmd/benchd -scale %s -only '^hash'   # one workload group; -keep/-cache to keep data", s),
	}
}

func (r *Runner) Pick(small, full []int) []int {
	sizes := full
	if r.Small() {
		sizes = small
	}
	if r.Cfg.OneSize {
		return sizes[:1]
	}
	return sizes
}
