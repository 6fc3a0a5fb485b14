package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Run("bad flags exit 64", func(t *testing.T) {
		for _, args := range [][]string{{"-scale", "huge"}, {"-only", "("}, {"-nosuchflag"}} {
			if code := run(args); code != 64 {
				t.Errorf("run(%q) = %d, want 64", args, code)
			}
		}
	})

	t.Run("writes the report with the machine and reproduce commands", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "PERFORMANCE.md")
		data := filepath.Join(t.TempDir(), "data")
		if code := run([]string{"-only", "^no-such-workload$", "-write", out, "-note", "A note.", "-data", data}); code != 0 {
			t.Fatalf("exit %d", code)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"# Performance", "A note.", "cores", "Load average", "go version",
			"| workload | size | Bindery |", "make bench"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("report lacks %q:\n%s", want, b)
			}
		}
		if left, err := os.ReadDir(data); err != nil || len(left) != 0 {
			t.Errorf("data left behind in %s: %v %v", data, left, err)
		}
	})
}

// TestSmoke runs the whole small scale (a few minutes): make bench-smoke's
// "does it run" check, as a Go test. It runs only with BINDERY_BENCH_SMOKE=1
// so that go test ./... stays quick.
func TestSmoke(t *testing.T) {
	if os.Getenv("BINDERY_BENCH_SMOKE") == "" {
		t.Skip("set BINDERY_BENCH_SMOKE=1 to run the small-scale bench (a few minutes)")
	}
	out := filepath.Join(t.TempDir(), "PERFORMANCE.md")
	if code := run([]string{"-scale", "small", "-write", out}); code != 0 {
		t.Fatalf("benchd exited %d", code)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "| rescan unchanged files |") {
		t.Fatalf("report: %v\n%s", err, b)
	}
}
