// Command benchd is `make bench`: it runs every performance workload of
// Bindery beside the tools users compare it with, in one run, prints one
// table and, with -write, records it in docs/PERFORMANCE.md.
//
// Exit status: 0 when every workload ran (targets missed are reported as
// FAIL rows, not as a failed command: the report is the product), 1 when a
// benchmark failed to build or crashed, 64 on bad flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/bindery-nas/bindery/internal/bench"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("benchd", flag.ContinueOnError)
	scale := fs.String("scale", envOr("BENCH_SCALE", "small"), "small (a few minutes) or full (up to 30 minutes) (env BENCH_SCALE)")
	write := fs.String("write", "", "write the report as Markdown to this file (e.g. docs/PERFORMANCE.md)")
	note := fs.String("note", "", "text placed above the table in the -write file (e.g. the machine's state)")
	only := fs.String("only", "", "run only the workloads matching this regexp: "+strings.Join(bench.WorkloadNames(), ", "))
	data := fs.String("data", "", "folder in which the run makes its own folder for generated data and binaries (default: the OS temp dir)")
	keep := fs.Bool("keep", false, "keep the run's data folder afterwards (default: removed)")
	cache := fs.String("cache", "", "keep the benchmarks' generated corpora in this folder between runs (default: none)")
	oneSize := fs.Bool("one-size", false, "run each workload at its scale's first size only (make bench-smoke)")
	if err := fs.Parse(args); err != nil {
		return 64
	}
	cfg := bench.Config{DataDir: *data, Keep: *keep, Cache: *cache, OneSize: *oneSize, Log: os.Stderr}
	var err error
	if cfg.Scale, err = bench.ParseScale(*scale); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 64
	}
	if *only != "" {
		if cfg.Only, err = regexp.Compile(*only); err != nil {
			fmt.Fprintln(os.Stderr, "benchd: -only:", err)
			return 64
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchd:", err)
		return 1
	}
	if err := rep.WriteText(os.Stdout); err != nil {
		return 1
	}
	if *write != "" {
		if err := os.WriteFile(*write, []byte(rep.Markdown(*note)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchd:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "benchd: wrote", *write)
	}
	if errs := rep.Errors(); len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "benchd: %d workload(s) failed to run:\n", len(errs))
		for _, r := range errs {
			fmt.Fprintf(os.Stderr, "  %s %s: %s\n", r.Workload, r.Size, r.Note)
		}
		return 1
	}
	return 0
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
