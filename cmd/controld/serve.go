package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bindery-nas/bindery/internal/api"
	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/events"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/scheduler"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/watch"
	"github.com/bindery-nas/bindery/internal/web"
	"github.com/bindery-nas/bindery/migrations"
	"github.com/bindery-nas/bindery/protocol"
)

// DefaultShutdownGrace is how long in-flight API requests may finish on
// SIGTERM: they are short, and workerd (engine.DefaultShutdownGrace) needs
// longer to release its leases.
const DefaultShutdownGrace = 10 * time.Second

// ServeConfig is what `controld serve` runs with. Every field has a flag
// and an environment fallback; see Main.Flags.
type ServeConfig struct {
	// DB is the SQLite file; default <state-dir>/bindery.db.
	DB string
	// Listen is the API's address; default 127.0.0.1:8080 (loopback only:
	// the container image and compose file set 0.0.0.0:8080).
	Listen string
	// StateDir holds the database (by default), the cover cache and the
	// generated admin token; default /state.
	StateDir string
	// LibraryRoots confine library paths; default [/libraries].
	LibraryRoots []string
	// AdminTokenFile holds the admin token. Default: BINDERY_ADMIN_TOKEN
	// when set, else <state-dir>/admin.token, generated on first start.
	AdminTokenFile string
	// ShutdownGrace bounds a graceful shutdown; default
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// NoScheduler disables the scheduler (tests that drive the queue by
	// hand); stale recovery then runs on its own timer.
	NoScheduler bool
	// NoWatch disables the change watcher for every library, whatever
	// their watch setting (BINDERY_NO_WATCH=1).
	NoWatch bool
}

// Main is controld serve as an object, so that tests can run it in
// process: ParseFlags, Run (returns once serving), Close.
type Main struct {
	Config ServeConfig
	Logger *slog.Logger

	Store     *store.Store
	API       *api.Server
	Events    *events.Broker
	Scheduler *scheduler.Scheduler
	// Watcher turns file system events into folder-scoped scan requests.
	Watcher *watch.Manager
	Token   string
	// TokenPath is where the token came from ("" when from the env).
	TokenPath string

	flags    *pflag.FlagSet
	ln       net.Listener
	http     *http.Server
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	serveErr chan error
}

// NewMain returns a Main with flags bound to its Config, defaults taken
// from the environment.
func NewMain() *Main {
	m := &Main{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)), serveErr: make(chan error, 1)}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	c := &m.Config
	fs.StringVar(&c.DB, "db", cli.Env("BINDERY_DB", ""), "SQLite database file or postgres:// URL (env BINDERY_DB; default <state-dir>/bindery.db)")
	fs.StringVar(&c.Listen, "listen", cli.Env("BINDERY_LISTEN", "127.0.0.1:8080"),
		"address of the admin API (env BINDERY_LISTEN); use 0.0.0.0:8080 to serve other hosts")
	fs.StringVar(&c.StateDir, "state-dir", cli.Env("BINDERY_STATE_DIR", cli.DefaultStateDir),
		"state folder: database, cover cache, generated admin token (env BINDERY_STATE_DIR)")
	fs.StringSliceVar(&c.LibraryRoots, "library-root", pathsafe.SplitRoots(cli.Env("BINDERY_LIBRARY_ROOT", cli.DefaultLibraryRoot)),
		"folder library paths must lie under; repeatable or comma-separated (env BINDERY_LIBRARY_ROOT)")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", cli.Env("BINDERY_ADMIN_TOKEN_FILE", ""),
		"file holding the admin bearer token (env BINDERY_ADMIN_TOKEN_FILE); without it BINDERY_ADMIN_TOKEN is used, "+
			"else <state-dir>/admin.token, created with a random token on first start")
	fs.BoolVar(&c.NoWatch, "no-watch", cli.Env("BINDERY_NO_WATCH", "") == "1",
		"watch no library for changes, whatever its watch setting (env BINDERY_NO_WATCH=1)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", DefaultShutdownGrace,
		"how long in-flight requests may finish on SIGTERM (env BINDERY_SHUTDOWN_GRACE)")
	m.flags = fs
	return m
}

// Flags is the flag set, for cobra's help and parsing.
func (m *Main) Flags() *pflag.FlagSet { return m.flags }

// ParseFlags parses args into Config.
func (m *Main) ParseFlags(args []string) error {
	if err := m.flags.Parse(args); err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	return cli.ApplyEnv(m.flags, map[string]string{"shutdown-grace": "BINDERY_SHUTDOWN_GRACE"})
}

// Run migrates and opens the database, loads the token, starts the
// scheduler and the event feed and begins serving. It returns once the
// listener is open; Close stops everything.
func (m *Main) Run(ctx context.Context) error {
	c := &m.Config
	if c.StateDir == "" {
		return cli.Exit(cli.ExitUsage, errors.New("serve: --state-dir is empty"))
	}
	if c.DB == "" {
		c.DB = filepath.Join(c.StateDir, "bindery.db")
	}
	if _, err := pathsafe.OpenRoots(c.LibraryRoots); err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("serve: %w", err))
	}
	if err := os.MkdirAll(c.StateDir, 0o750); err != nil {
		return cli.Exit(cli.ExitFailure, fmt.Errorf("serve: state dir: %w", err))
	}
	if err := m.openStore(ctx); err != nil {
		return err
	}
	if err := m.loadToken(); err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	coverKey, err := m.loadCoverKey()
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var kick func()
	if c.NoScheduler {
		m.runRecovery(ctx)
	} else {
		m.Scheduler = scheduler.New(m.Store, scheduler.Config{Registry: reg, Logger: m.Logger})
		if err := m.Scheduler.Start(ctx); err != nil {
			return cli.Exit(cli.ExitFailure, err)
		}
		kick = m.Scheduler.Kick
	}
	// The feed's change checks also wake the dispatcher: a job that ended
	// is followed up (its hash requested, the queue promoted) at once.
	m.Events = events.New(events.Config{Store: m.Store, Logger: m.Logger, OnChange: kick})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := m.Events.Run(ctx); err != nil {
			m.Logger.Error("event feed stopped", "err", err)
		}
	}()
	var watchStatus func(int64) (watch.Status, bool)
	if !c.NoWatch {
		m.Watcher = watch.New(watch.Config{Store: m.Store, Logger: m.Logger, Kick: kick})
		watchStatus = m.Watcher.Status
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			_ = m.Watcher.Run(ctx)
		}()
	}
	m.API, err = api.New(api.Config{Store: m.Store, Token: m.Token, CoverKey: coverKey, LibraryRoots: c.LibraryRoots, UI: web.Handler(),
		StateDir: c.StateDir, Events: m.Events, Logger: m.Logger, Registry: reg, Kick: kick, WatchStatus: watchStatus})
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	m.ln, err = net.Listen("tcp", c.Listen)
	if err != nil {
		return cli.Exit(cli.ExitFailure, fmt.Errorf("serve: listen: %w", err))
	}
	m.http = m.API.HTTPServer(c.Listen)
	m.http.BaseContext = func(net.Listener) context.Context { return ctx }
	go func() { m.serveErr <- m.http.Serve(m.ln) }()
	m.Logger.Info("controld serving", "addr", m.ln.Addr().String(), "db", m.Store.Path(), "library_roots", c.LibraryRoots)
	return nil
}

// openStore migrates, then opens the database: a newer schema exits with
// ExitSchema, an unusable file with ExitDatabase.
func (m *Main) openStore(ctx context.Context) error {
	if err := store.Migrate(ctx, m.Config.DB); err != nil {
		if errors.Is(err, migrations.ErrSchemaTooNew) {
			return cli.Exit(cli.ExitSchema, err)
		}
		return cli.Exit(cli.ExitDatabase, err)
	}
	st, err := store.Open(ctx, store.Config{Path: m.Config.DB, Role: store.RoleControl})
	if err != nil {
		return cli.Exit(cli.ExitDatabase, err)
	}
	if err := st.CheckSchema(ctx); err != nil {
		st.Close()
		return cli.Exit(cli.ExitSchema, err)
	}
	m.Store = st
	return nil
}

// loadToken reads the token from --admin-token-file, else
// BINDERY_ADMIN_TOKEN, else <state>/admin.token, which is created (mode
// 0600, never overwritten) with 32 random bytes on first start.
func (m *Main) loadToken() error {
	if f := m.Config.AdminTokenFile; f != "" {
		return m.readToken(f)
	}
	if tok := os.Getenv("BINDERY_ADMIN_TOKEN"); tok != "" {
		m.Token = strings.TrimSpace(tok)
		return nil
	}
	path := filepath.Join(m.Config.StateDir, "admin.token")
	tok, created, err := secretFile(path, 32)
	if err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	m.Token, m.TokenPath = tok, path
	if created {
		m.Logger.Info("generated a new admin token", "file", path)
	} else {
		m.Logger.Info("admin token loaded", "file", path)
	}
	return nil
}

func (m *Main) readToken(path string) error {
	tok, err := readSecret(path)
	if err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	m.Token, m.TokenPath = tok, path
	m.Logger.Info("admin token loaded", "file", path)
	return nil
}

// runRecovery recovers stale leases every lease/2 when the scheduler
// (which does it otherwise) is off.
func (m *Main) runRecovery(ctx context.Context) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(protocol.DefaultLeaseDuration / protocol.RecoverDivisor)
		defer t.Stop()
		ls := leases.New(m.Store)
		for {
			if n, err := ls.RecoverStale(ctx); err != nil && ctx.Err() == nil {
				m.Logger.Warn("stale recovery failed", "err", err)
			} else if n.Total() > 0 {
				m.Logger.Info("recovered stale leases", "jobs", n.Jobs, "thumbnails", n.Thumbnails, "cleanup", n.Cleanup, "wal", n.WAL)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// HTTPTimeouts describes the server's timeouts, for logs and tests.
func (m *Main) HTTPTimeouts() string {
	if m.http == nil {
		return ""
	}
	h := m.http
	return fmt.Sprintf("read_header=%s read=%s write=%s idle=%s", h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout)
}

// Addr is the listening address (useful with port 0).
func (m *Main) Addr() string {
	if m.ln == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// Wait blocks until the HTTP server stops on its own (an error) or ctx
// ends.
func (m *Main) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-m.serveErr:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// Close shuts the server down gracefully (in-flight requests get
// ShutdownGrace), stops the scheduler and the feed, and closes the
// database.
func (m *Main) Close() error {
	var errs []error
	if m.http != nil {
		grace := m.Config.ShutdownGrace
		if grace <= 0 {
			grace = 10 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if m.cancel != nil {
			m.cancel() // ends event streams so Shutdown need not wait for them
		}
		if err := m.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
	}
	if m.Scheduler != nil {
		m.Scheduler.Stop()
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	if m.Store != nil {
		errs = append(errs, m.Store.Close())
	}
	return errors.Join(errs...)
}

func newServeCommand() *cobra.Command {
	m := NewMain()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Migrate the database and serve the admin API",
		Long: `Migrate the database, then serve the admin HTTP API under /api/v1 (bearer
token), /healthz, /readyz and /metrics, run the scheduler (scan queue,
periodic scans, retention, WAL checkpoints, stale-lease recovery) and the
event feed. SIGTERM or SIGINT shuts down gracefully.

Exit codes: 2 the database is unusable, 3 its schema is newer than this
binary, 64 bad flags or token.`,
		Example: `  controld serve --state-dir /state --library-root /libraries --listen 0.0.0.0:8080
  BINDERY_ADMIN_TOKEN=$(cat token) controld serve --db /var/lib/bindery/bindery.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := m.Run(ctx); err != nil {
				m.Close()
				return err
			}
			err := m.Wait(ctx)
			m.Logger.Info("controld shutting down")
			return errors.Join(err, m.Close())
		},
	}
	cmd.Flags().AddFlagSet(m.Flags())
	return cmd
}
