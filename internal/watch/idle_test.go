package watch

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/protocol"
)

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIdleCPU measures the watcher's CPU on an idle library of 100,000
// files in 1,000 folders, with inotify and with polling (docs/PERFORMANCE-NOTES.md).
// It takes a minute: BINDERY_WATCH_IDLE_CPU=1 runs it.
func TestIdleCPU(t *testing.T) {
	if os.Getenv("BINDERY_WATCH_IDLE_CPU") == "" {
		t.Skip("BINDERY_WATCH_IDLE_CPU=1 measures the idle CPU (about a minute)")
	}
	var pre []string
	for f := range 1000 {
		for i := range 100 {
			pre = append(pre, fmt.Sprintf("S%02d/F%03d/book %03d.cbz", f/100, f, i))
		}
	}
	for _, mode := range []protocol.WatchMode{protocol.WatchInotify, protocol.WatchPoll} {
		t.Run(string(mode), func(t *testing.T) { idleCPU(t, mode, pre) })
	}
}

func idleCPU(t *testing.T, mode protocol.WatchMode, pre []string) {
	{
		e := startWatch(t, mode, 2*time.Second, Config{Reconcile: 5 * time.Second}, pre...)
		s := e.waitActive(string(mode))
		time.Sleep(2 * time.Second)
		const span = 20 * time.Second
		before := cpuTime(t)
		time.Sleep(span)
		used := cpuTime(t) - before
		s, _ = e.m.Status(e.lib)
		t.Logf("%s, %d folders, 100,000 files, poll interval 1 s: %v CPU in %v idle = %.3f%% of a core",
			mode, s.Folders, used, span, 100*used.Seconds()/span.Seconds())
		if mode == protocol.WatchPoll {
			p := newPoll(e.root, time.Second)
			if err := p.start(); err != nil {
				t.Fatal(err)
			}
			c0, w0 := cpuTime(t), time.Now()
			for range 10 {
				if err := p.poll(func(string) {}); err != nil {
					t.Fatal(err)
				}
			}
			pass := (cpuTime(t) - c0) / 10
			t.Logf("one poll pass over %d folders: %v CPU (%v wall); at the default 30 s interval %.4f%% of a core",
				len(p.folders), pass, time.Since(w0)/10, 100*pass.Seconds()/30)
			if pass.Seconds()/30 > 0.01 {
				t.Errorf("poll at the default interval costs %.2f%% of a core > 1%%", 100*pass.Seconds()/30)
			}
		}
	}
}
