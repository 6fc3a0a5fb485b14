package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/pgtest"
)

// TestChaosSmoke is the reduced crash run inside `go test ./...`: 150
// files and six videos, six workerd SIGKILLs (two of them, or two more,
// while the worker runs ffprobe, then ffmpeg), two controld SIGKILLs and
// one zombie, on the real binaries. `make chaos` runs the full one (cmd/chaos). Set
// BINDERY_CHAOS_SEED to replay a schedule.
func TestChaosSmoke(t *testing.T) {
	runSmoke(t, Config{Dir: t.TempDir(), Log: testWriter{t}})
}

// TestChaosSmokePostgres is TestChaosSmoke on PostgreSQL (issue 22): each
// run on a database of its own, controld as the schema's owner, workerd as
// the worker role, the same faults and the same invariants.
func TestChaosSmokePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness runs real daemons for about a minute")
	}
	srv := pgtest.Shared(t)
	role := fmt.Sprintf("chaos_workerd_%d", os.Getpid())
	ctx := context.Background()
	var dbs []string
	t.Cleanup(func() {
		for _, db := range dbs {
			_ = srv.Exec(ctx, db, "DROP OWNED BY "+role)
		}
		_ = srv.Exec(ctx, "postgres", "DROP ROLE IF EXISTS "+role)
	})
	// A smaller library and delete phase than the SQLite run's (the same
	// faults): make test runs both beside the container builds.
	runSmoke(t, Config{Dir: t.TempDir(), Log: testWriter{t}, Files: 80, DeleteGroups: 100, Database: func(run string) (string, string, error) {
		db := pgtest.NewDatabase(t)
		dbs = append(dbs, db)
		return srv.URL(db, pgtest.Superuser), srv.URL(db, role), nil
	}})
}

func runSmoke(t *testing.T, cfg Config) {
	t.Helper()
	if testing.Short() {
		t.Skip("the crash harness runs real daemons for about a minute")
	}
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

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
