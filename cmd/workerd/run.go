package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/arenas"
	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/migrations"
	"github.com/bindery-nas/bindery/protocol"
)

// runConfig is everything "workerd run" is configured with; flags override
// the BINDERY_* environment, which overrides the defaults.
type runConfig struct {
	DBPath               string
	StateDir             string
	LibraryRoot          string
	WorkerID             string
	Lease                time.Duration
	ThumbnailConcurrency int
	ShutdownGrace        time.Duration
	// TestExecutor is BINDERY_TEST_EXECUTOR (test-only; see executors.go).
	TestExecutor string
	// PprofAddr is BINDERY_PPROF_ADDR: where to serve net/http/pprof
	// ("" off, the default).
	PprofAddr string
}

func (m *Main) newRunCommand() *cobra.Command {
	var cfg runConfig
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Claim and execute jobs until SIGTERM/SIGINT",
		Long: `Run the job engine: register this worker, claim rows of the four lease
tables when idle, heartbeat every lease/3, and write each row's result.

On SIGTERM or SIGINT workerd stops claiming, lets running work finish for up
to --shutdown-grace, then cancels it and hands its leases back at once, and
exits 0.

Exit codes: 0 clean shutdown, 1 failure, 2 database missing/corrupt,
3 schema older or newer than this binary (run "controld migrate" or upgrade
workerd), 64 usage, 70 a cover render stuck where no cancellation reaches
(past thumbnail.render_timeout_seconds, then two leases): the supervisor
restarts workerd, and a cover that sticks three times fails render_crashed.

Profiling (off by default): BINDERY_PPROF_ADDR=127.0.0.1:6061 serves Go's
net/http/pprof handlers (/debug/pprof/heap and the others) on that address,
for measuring; never expose it beyond the host.

Memory: workerd limits glibc's malloc arenas to ` + strconv.Itoa(arenas.Default) + ` as it starts, before any
thread runs (SQLite's page caches and libvips' renders would otherwise
spread over up to 8 arenas per core and raise the resident set by their
fragmentation). MALLOC_ARENA_MAX=N in its environment sets another limit
(glibc's own variable; workerd then leaves the limit to glibc), and
MALLOC_ARENA_MAX=0 restores glibc's default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.ApplyEnv(cmd.Flags(), map[string]string{"lease": "BINDERY_LEASE",
				"thumbnail-concurrency": "BINDERY_THUMBNAIL_CONCURRENCY", "shutdown-grace": "BINDERY_SHUTDOWN_GRACE"}); err != nil {
				return err
			}
			cfg.TestExecutor = os.Getenv("BINDERY_TEST_EXECUTOR")
			cfg.PprofAddr = os.Getenv("BINDERY_PPROF_ADDR")
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return m.run(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DBPath, "db", cli.Env("BINDERY_DB", cli.DefaultDB), "SQLite database file or postgres:// URL, shared with controld (env BINDERY_DB)")
	f.StringVar(&cfg.StateDir, "state-dir", cli.Env("BINDERY_STATE_DIR", cli.DefaultStateDir), "state directory: cover cache and temp files (env BINDERY_STATE_DIR)")
	f.StringVar(&cfg.LibraryRoot, "library-root", cli.Env("BINDERY_LIBRARY_ROOT", cli.DefaultLibraryRoot), "folders library paths must lie under, comma-separated; each must exist (env BINDERY_LIBRARY_ROOT)")
	f.StringVar(&cfg.WorkerID, "worker-id", cli.Env("BINDERY_WORKER_ID", ""), "this worker's id in worker_id columns; unique per live process (env BINDERY_WORKER_ID, default host-pid-random)")
	f.DurationVar(&cfg.Lease, "lease", protocol.DefaultLeaseDuration, "lease of a claimed row; heartbeats every lease/3 (env BINDERY_LEASE)")
	f.IntVar(&cfg.ThumbnailConcurrency, "thumbnail-concurrency", runtime.NumCPU(), "parallel cover renders (env BINDERY_THUMBNAIL_CONCURRENCY, default number of CPUs)")
	f.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", engine.DefaultShutdownGrace, "time running work may finish after SIGTERM before it is cancelled and released (env BINDERY_SHUTDOWN_GRACE)")
	return cmd
}

func (m *Main) run(ctx context.Context, cfg runConfig) error {
	if cfg.Lease < time.Second || cfg.ThumbnailConcurrency < 1 || cfg.ShutdownGrace <= 0 {
		return cli.Exit(cli.ExitUsage, errors.New("--lease must be ≥ 1s, --thumbnail-concurrency ≥ 1, --shutdown-grace > 0"))
	}
	if cfg.WorkerID == "" {
		cfg.WorkerID = defaultWorkerID()
	}
	st, err := openWorkerStore(ctx, cfg.DBPath)
	if err != nil {
		return err
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(m.Stderr, nil))
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
		defer stopPprof()
	}
	ex, err := buildExecutors(cfg, st)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	e, err := engine.New(st, ex, engine.Config{
		WorkerID: cfg.WorkerID, Lease: cfg.Lease, ThumbnailConcurrency: cfg.ThumbnailConcurrency,
		ShutdownGrace: cfg.ShutdownGrace, Logger: log,
		OnStuck: func() { os.Exit(cli.ExitStuck) },
	})
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	return e.Run(ctx)
}

// workerReaderCacheKiB is the page cache of each of workerd's reader
// connections, against SQLite's default 2,000 KiB: 8 of them, all full
// once the database passes a few MiB, were up to 16 MB of its resident set.
const workerReaderCacheKiB = 512

// workerMaxReaders bounds workerd's reader pool, against store.Open's 8.
// Each open connection holds its own parsed schema (about 0.9 MB: the
// tables, triggers and FTS4 tables of the whole database), its statement
// cache and its page cache, and the pool keeps every connection it ever
// opened: at 1,000,000 books workerd held 8, some 12 MB of its resident
// set. One is the change watcher's for good; the lanes' reads are short
// and none holds a reader while asking for another, so they share 3 (a
// read waits for a free one, it cannot deadlock).
const workerMaxReaders = 4

// openWorkerStore opens the database with the worker role and refuses a
// missing file, a file that is not a Bindery database, or a schema version
// this binary was not built for. It never creates or migrates anything.
func openWorkerStore(ctx context.Context, path string) (*store.Store, error) {
	st, err := store.Open(ctx, store.Config{Path: path, Role: store.RoleWorker, MaxReaders: workerMaxReaders, ReaderCacheKiB: workerReaderCacheKiB})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cli.Exit(cli.ExitDatabase, fmt.Errorf("%w (workerd never creates it: start controld or run \"controld migrate\" first)", err))
	}
	if err != nil {
		return nil, cli.Exit(cli.ExitDatabase, err)
	}
	err = st.CheckSchema(ctx)
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, migrations.ErrSchemaTooOld), errors.Is(err, migrations.ErrSchemaTooNew):
		st.Close()
		return nil, cli.Exit(cli.ExitSchema, fmt.Errorf("database %s: %w", st.Path(), err))
	default:
		st.Close()
		return nil, cli.Exit(cli.ExitDatabase, fmt.Errorf("database %s: %w", st.Path(), err))
	}
}

// defaultWorkerID is host-pid-random: unique per process even when a
// container restarts with the same pid.
func defaultWorkerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "workerd"
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
