package benchx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The driver reuses the packages' own Benchmark functions instead of
// rewriting their workloads: each package's test binary is compiled once
// (go test -c) and run directly at each size, so that one compile serves
// every size, no test cache interferes, and the binary's own peak RSS is
// the child's rusage.

// GoBench is one run of one package's benchmarks.
type GoBench struct {
	// Pkg is the package path relative to the module root, "./internal/scan".
	Pkg string
	// Bench is the -test.bench pattern.
	Bench string
	// Benchtime is -test.benchtime; default "1x".
	Benchtime string
	// Count is -test.count; default 1. With more, Results keeps the best.
	Count int
	// Env is added to the driver's environment (BENCH_FILES=…).
	Env []string
}

// Result is one benchmark line: its name without the -GOMAXPROCS suffix,
// iterations, and every metric by unit ("ns/op", "files/s", "MB/s"…).
type Result struct {
	Name    string
	N       int
	Metrics map[string]float64
}

// Outcome is what one GoBench run produced.
type Outcome struct {
	Results []Result
	// Skips maps a benchmark name to the reason it skipped.
	Skips map[string]string
	// MaxRSSMB is the test process's peak RSS (rusage of the child).
	MaxRSSMB float64
	Elapsed  time.Duration
}

// Find returns the result whose name ends with suffix (after a '/' or
// equal to it), or nil.
func (o *Outcome) Find(suffix string) *Result {
	for i := range o.Results {
		n := o.Results[i].Name
		if n == suffix || strings.HasSuffix(n, "/"+suffix) {
			return &o.Results[i]
		}
	}
	return nil
}

// SkipReason is the reason any benchmark whose name contains part skipped.
func (o *Outcome) SkipReason(part string) string {
	for name, why := range o.Skips {
		if strings.Contains(name, part) {
			return why
		}
	}
	return ""
}

// NewBinaries compiles into dir the packages of the module at root, once
// each; log receives progress lines.
func NewBinaries(root, dir string, log func(format string, args ...any)) *Binaries {
	return &Binaries{root: root, dir: dir, built: map[string]string{}, failed: map[string]error{}, log: log}
}

// Binaries compiles test binaries on demand, once per package, and
// commands (Build) once per run.
type Binaries struct {
	root, dir string
	built     map[string]string
	failed    map[string]error
	log       func(format string, args ...any)
}

func (bs *Binaries) get(ctx context.Context, pkg string) (string, error) {
	if p, ok := bs.built[pkg]; ok {
		return p, nil
	}
	if err, ok := bs.failed[pkg]; ok {
		return "", err
	}
	out := filepath.Join(bs.dir, strings.NewReplacer("./", "", "/", "_").Replace(pkg)+".test")
	bs.log("compiling %s", pkg)
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, pkg)
	cmd.Dir = bs.root
	msg, err := cmd.CombinedOutput()
	if err == nil {
		if _, serr := os.Stat(out); serr != nil {
			err = errors.New("package has no test files")
		}
	}
	if err != nil {
		err = fmt.Errorf("build failed: %s", firstLine(string(msg), err))
		bs.failed[pkg] = err
		return "", err
	}
	bs.built[pkg] = out
	return out, nil
}

// Build compiles a command (go build) once, for workloads that run the
// real daemons as processes.
func (bs *Binaries) Build(ctx context.Context, pkg string) (string, error) {
	key := "build:" + pkg
	if p, ok := bs.built[key]; ok {
		return p, nil
	}
	if err, ok := bs.failed[key]; ok {
		return "", err
	}
	out := filepath.Join(bs.dir, filepath.Base(pkg))
	bs.log("building %s", pkg)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = bs.root
	if msg, err := cmd.CombinedOutput(); err != nil {
		err = fmt.Errorf("build failed: %s", firstLine(string(msg), err))
		bs.failed[key] = err
		return "", err
	}
	bs.built[key] = out
	return out, nil
}

// run executes the benchmarks of g in the package's folder, with TMPDIR
// set to tmp so that generated data sets land in the driver's data dir.
func (bs *Binaries) run(ctx context.Context, g GoBench, tmp string) (*Outcome, error) {
	bin, err := bs.get(ctx, g.Pkg)
	if err != nil {
		return nil, err
	}
	bt := g.Benchtime
	if bt == "" {
		bt = "1x"
	}
	count := max(g.Count, 1)
	args := []string{"-test.run", "^$", "-test.bench", g.Bench, "-test.benchtime", bt,
		"-test.count", strconv.Itoa(count), "-test.timeout", "60m"}
	bs.log("running %s -test.bench %s %s", g.Pkg, g.Bench, strings.Join(g.Env, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = filepath.Join(bs.root, filepath.FromSlash(g.Pkg))
	cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), g.Env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err = cmd.Run()
	o := parseBench(buf.String())
	o.Elapsed = time.Since(start)
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			o.MaxRSSMB = float64(ru.Maxrss) / 1024
		}
	}
	if err != nil {
		return o, fmt.Errorf("%s: %v: %s", g.Pkg, err, failureLine(buf.String()))
	}
	return o, nil
}

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)
	skipLine  = regexp.MustCompile(`^\s*--- SKIP: (Benchmark\S+)`)
)

// parseBench reads `go test -bench` output. With -count > 1 the best line
// per name is kept: the lowest ns/op.
func parseBench(out string) *Outcome {
	o := &Outcome{Skips: map[string]string{}}
	index := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	pendingSkip := ""
	for sc.Scan() {
		line := sc.Text()
		if m := skipLine.FindStringSubmatch(line); m != nil {
			pendingSkip = stripProcs(m[1])
			o.Skips[pendingSkip] = "skipped"
			continue
		}
		if pendingSkip != "" {
			// The reason follows as an indented "file.go:NN: why" line.
			if t := strings.TrimSpace(line); t != "" && strings.HasPrefix(line, " ") {
				if _, why, ok := strings.Cut(t, ": "); ok {
					t = why
				}
				o.Skips[pendingSkip] = t
			}
			pendingSkip = ""
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		r := Result{Name: stripProcs(m[1]), N: n, Metrics: map[string]float64{}}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				r.Metrics[f[i+1]] = v
			}
		}
		if len(r.Metrics) == 0 {
			continue // a name printed alone before a sub-benchmark's log lines
		}
		if i, ok := index[r.Name]; ok {
			if r.Metrics["ns/op"] < o.Results[i].Metrics["ns/op"] {
				o.Results[i] = r
			}
			continue
		}
		index[r.Name] = len(o.Results)
		o.Results = append(o.Results, r)
	}
	return o
}

// stripProcs removes the -GOMAXPROCS suffix the testing package adds.
func stripProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// failureLine picks the most telling line of a failed run's output.
func failureLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.Contains(t, ".go:") || strings.HasPrefix(t, "panic:") {
			return Trunc(t, 200)
		}
	}
	if len(lines) > 0 {
		return Trunc(lines[len(lines)-1], 200)
	}
	return "no output"
}

func firstLine(out string, err error) string {
	for _, l := range strings.Split(out, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return Trunc(t, 200)
		}
	}
	return err.Error()
}

func Trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
