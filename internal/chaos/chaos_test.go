package chaos

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// TestChaosSmoke is the reduced crash run inside `go test ./...`: 150
// files and six videos, six workerd SIGKILLs (two of them, or two more,
// while the worker runs ffprobe, then ffmpeg), two controld SIGKILLs and
// one zombie, on the real binaries. `make chaos` runs the full one (cmd/chaos). Set
// BINDERY_CHAOS_SEED to replay a schedule.
func TestChaosSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness runs real daemons for about a minute")
	}
	cfg := Config{Dir: t.TempDir(), Log: testWriter{t}}
	if s := os.Getenv("BINDERY_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BINDERY_CHAOS_SEED: %v", err)
		}
		cfg.Seed = seed
	}
	start := time.Now()
	r, err := Run(t.Context(), cfg)
	if r != nil {
		t.Log("\n" + r.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("invariants broken (seed %d); logs in %s", r.Seed, cfg.Dir)
	}
	if r.WorkerKills < 6 || r.ControlKills < 2 || r.ZombieRows == 0 {
		t.Fatalf("faults not all injected: %+v", r)
	}
	t.Logf("smoke run took %v", time.Since(start).Round(time.Second))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
