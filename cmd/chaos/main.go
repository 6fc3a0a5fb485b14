// Command chaos runs Bindery's crash harness (internal/chaos) at full size:
// `make chaos`. It builds controld and workerd, generates the library,
// indexes a clean copy, then runs the faulty run and prints the summary.
// Exit status 1 when an invariant broke, 2 when the harness could not run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos"
)

func main() {
	var cfg chaos.Config
	keep := flag.Bool("keep", false, "keep the work folder (binaries, libraries, state, logs) after a passing run")
	flag.StringVar(&cfg.Dir, "dir", "", "work folder (default: a new temp folder)")
	flag.IntVar(&cfg.Files, "files", 5000, "library size")
	flag.IntVar(&cfg.Broken, "broken", 0, "broken files among them (default files/15)")
	flag.IntVar(&cfg.WorkerKills, "kills", 50, "workerd SIGKILLs")
	flag.IntVar(&cfg.ControlKills, "controld-kills", 4, "controld SIGKILLs")
	flag.DurationVar(&cfg.Lease, "lease", 3*time.Second, "workerd --lease")
	flag.DurationVar(&cfg.MinGap, "min-gap", 500*time.Millisecond, "least pause between two faults")
	flag.DurationVar(&cfg.MaxGap, "max-gap", 4*time.Second, "longest pause between two faults")
	flag.DurationVar(&cfg.DrainTimeout, "drain-timeout", 30*time.Minute, "longest wait for a run to drain")
	flag.IntVar(&cfg.Videos, "videos", 30, "video files added to the library (negative: none)")
	flag.IntVar(&cfg.VideoKills, "video-kills", 6, "workerd SIGKILLs of a worker running ffprobe or ffmpeg (in turn; among -kills when they can be)")
	flag.IntVar(&cfg.DeleteGroups, "delete-groups", 1000, "duplicate groups resolved in the delete phase")
	flag.IntVar(&cfg.DeleteKills, "delete-kills", 10, "workerd SIGKILLs while the delete job runs")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "fault schedule seed (default: the clock)")
	flag.Parse()
	cfg.Log = os.Stderr
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "bindery-chaos-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		cfg.Dir = dir
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	r, err := chaos.Run(ctx, cfg)
	if r != nil {
		fmt.Print(r.String())
	}
	fmt.Printf("  wall time %v; work folder %s\n", time.Since(start).Round(time.Second), cfg.Dir)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	case !r.OK():
		os.Exit(1)
	}
	if !*keep {
		os.RemoveAll(cfg.Dir)
	}
}
