package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/migrations"
)

// dialect is the database a Store speaks to (SQLite or PostgreSQL; the
// name keeps clear of package engine). Only this package knows it:
// the daemons hand over BINDERY_DB as they got it.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

// dialectOf reads the dialect off the database setting: a postgres:// (or
// postgresql://) URL is PostgreSQL, anything else an SQLite file.
func dialectOf(db string) dialect {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return dialectPostgres
	}
	return dialectSQLite
}

// idleTxTimeout is how long the server keeps a transaction whose client
// went quiet; see pgURL.
const idleTxTimeout = 10 * time.Second

// connectTimeout is how long a connection attempt may take, TCP and
// PostgreSQL's startup both, when the URL sets no connect_timeout: a
// worker host whose network drops packets would otherwise wait out TCP's
// SYN retries (over two minutes on Linux) before each try, and so rejoin
// late once the network is back.
const connectTimeout = 10 * time.Second

// pick is the engine's spelling of an SQL fragment the two do not share
// (date arithmetic, JSON, hex): one of two constants, so every statement
// stays built from constants.
func (s *Store) pick(sqlite, postgres string) string {
	if s.dialect == dialectPostgres {
		return postgres
	}
	return sqlite
}

// pgURL is the user's URL with the session settings every connection
// needs: UTC, so that the protocol's zone-less time text means UTC; an end
// to transactions left idle (idleTxTimeout); and, for the reader pool,
// read-only transactions (the counterpart of SQLite's query_only); and a
// connect_timeout (connectTimeout) unless the URL gives its own.
//
// The store never waits on anything but the server inside a transaction,
// so a transaction goes idle only when its process stopped talking: its
// host was cut off or froze. The server would keep its locks until TCP
// gave up, minutes later, and every worker needing those rows would wait
// (the scale-out test's cut-off host held a scan's rows so). With the
// timeout the server ends such a transaction after idleTxTimeout, the wait
// SQLite's busy timeout bounds on one host.
func pgURL(raw string, readOnly bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	q := u.Query()
	q.Set("timezone", "UTC")
	q.Set("idle_in_transaction_session_timeout", strconv.FormatInt(idleTxTimeout.Milliseconds(), 10))
	if !q.Has("connect_timeout") {
		q.Set("connect_timeout", strconv.FormatInt(int64(connectTimeout/time.Second), 10))
	}
	if readOnly {
		q.Set("default_transaction_read_only", "on")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// redact is the URL without its password, for error messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

func openPostgres(ctx context.Context, cfg Config) (*Store, error) {
	registerPostgres()
	name := redact(cfg.Path)
	open := func(readOnly bool, conns int) (*sqlx.DB, error) {
		u, err := pgURL(cfg.Path, readOnly)
		if err != nil {
			return nil, err
		}
		db, err := sqlx.Open(driverPostgres, u)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		db.SetMaxOpenConns(conns)
		db.SetMaxIdleConns(conns)
		return useColumns(db), nil
	}
	w, err := open(false, cfg.MaxWriters)
	if err != nil {
		return nil, err
	}
	r, err := open(true, cfg.MaxReaders)
	if err != nil {
		w.Close()
		return nil, err
	}
	s := &Store{w: w, r: r, path: name, dsn: cfg.Path, dialect: dialectPostgres,
		txOptions:      &sql.TxOptions{Isolation: sql.LevelSerializable},
		claimTxOptions: &sql.TxOptions{Isolation: sql.LevelReadCommitted}}
	if err := s.probePostgres(ctx, cfg.Role); err != nil {
		s.Close()
		return nil, err
	}
	s.now = cfg.Now
	if s.now == nil {
		clock, err := startDBClock(ctx, r)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		s.now, s.stop = clock.now, clock.stop
	}
	return s, nil
}

// probePostgres fails early when the server does not answer, and when
// workerd's role could write outside protocol §7: the grants made by
// controld migrate are the whitelist, and a role that owns the tables or is
// a superuser would bypass them.
func (s *Store) probePostgres(ctx context.Context, role Role) error {
	var policyWritable bool
	err := s.r.QueryRowContext(ctx, `SELECT has_column_privilege('jobs', 'kind', 'UPDATE')`).Scan(&policyWritable)
	if err != nil {
		return fmt.Errorf("open %s: not a usable Bindery database: %w", s.path, err)
	}
	if role == RoleWorker && policyWritable {
		return fmt.Errorf("open %s: %w: workerd's role may update jobs.kind, so the protocol's write whitelist would not hold; connect as the worker role that controld migrate creates", s.path, ErrWorkerRole)
	}
	return nil
}

// ErrWorkerRole: workerd was given a PostgreSQL role with more rights than
// protocol §7 allows it.
var ErrWorkerRole = errors.New("worker role too powerful")

// dbClock is the database server's clock, read once and then carried
// forward on this host's monotonic clock. Every lease time a process writes
// is then the server's time, whatever this host's wall clock says or how it
// is stepped, without a round trip per statement; one SQL text still serves
// both engines. It is read again every minute so that the two oscillators
// cannot drift apart (100 ppm is 6 ms a minute).
//
// A read's error is at most half its round trip, so, as NTP does, each sync
// takes a few reads and keeps the quickest, and a later sync replaces the
// clock only when its bound is no worse than the kept one's after drift: a
// resync on a loaded host cannot make a good clock worse.
type dbClock struct {
	db    *sqlx.DB
	mu    sync.Mutex
	base  time.Time     // the server's clock …
	at    time.Time     // … when this host's monotonic clock read this,
	bound time.Duration // give or take this much
	done  chan struct{}
	once  sync.Once // Close may be called twice
	wg    sync.WaitGroup
}

const (
	// dbClockResync is how often the server's clock is read again.
	dbClockResync = time.Minute
	// dbClockReads is how many reads one sync takes.
	dbClockReads = 3
	// dbClockDrift is how far two oscillators may drift apart: 100 ppm.
	dbClockDrift = 10_000
)

func startDBClock(ctx context.Context, db *sqlx.DB) (*dbClock, error) {
	c := &dbClock{db: db, done: make(chan struct{})}
	if err := c.sync(ctx); err != nil {
		return nil, err
	}
	c.wg.Add(1)
	go c.loop()
	return c, nil
}

func (c *dbClock) loop() {
	defer c.wg.Done()
	t := time.NewTicker(dbClockResync)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = c.sync(ctx) // a failed read keeps the last one, still monotonic
			cancel()
		}
	}
}

// sync reads the server's clock dbClockReads times and keeps the read with
// the shortest round trip, placed at that trip's middle.
func (c *dbClock) sync(ctx context.Context) error {
	var base, at time.Time
	bound := time.Duration(-1)
	for range dbClockReads {
		before := time.Now()
		var server time.Time
		if err := c.db.QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
			if bound >= 0 {
				break
			}
			return fmt.Errorf("database clock: %w", err)
		}
		if half := time.Since(before) / 2; bound < 0 || half < bound {
			base, at, bound = server, before.Add(half), half
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || bound <= c.bound+time.Since(c.at)/dbClockDrift {
		c.base, c.at, c.bound = base, at, bound
	}
	return nil
}

func (c *dbClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.Add(time.Since(c.at))
}

func (c *dbClock) stop() {
	c.once.Do(func() { close(c.done) })
	c.wg.Wait()
}

// migratePostgres applies PostgreSQL's migrations as the URL's role.
func migratePostgres(ctx context.Context, raw string) error {
	registerPostgres()
	u, err := pgURL(raw, false)
	if err != nil {
		return err
	}
	// pgx's own driver: goose writes PostgreSQL's placeholders and booleans.
	db, err := sql.Open("pgx", u)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", redact(raw), err)
	}
	defer db.Close()
	if err := migrations.UpPostgres(ctx, db); err != nil {
		return fmt.Errorf("migrate %s: %w", redact(raw), err)
	}
	return nil
}

// pgCode is the SQLSTATE of a PostgreSQL error, "" for any other error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// IsPostgres reports whether path names a PostgreSQL database (a
// postgres:// URL) rather than an SQLite file.
func IsPostgres(path string) bool { return dialectOf(path) == dialectPostgres }

// PostgresURL is the URL pgx connects to for raw, with Bindery's session
// settings (connect timeout, idle transaction timeout; read-only
// transactions when readOnly).
func PostgresURL(raw string, readOnly bool) (string, error) { return pgURL(raw, readOnly) }

// Redact is the URL without its password, for messages.
func Redact(raw string) string { return redact(raw) }

// IsUnavailable reports whether err says that the database server could
// not be reached or dropped the connection (a restart, a network cut), as
// opposed to refusing a statement: the work that met it is not at fault
// and must run again once the server is back. A local SQLite file is never
// unavailable in this sense.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	switch code := pgCode(err); {
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03":
		return true // connection exception; admin or crash shutdown; starting up
	}
	// *net.OpError, not the net.Error interface: a syscall.Errno has its
	// methods too, and a full local disk (ENOSPC) is the work's own error.
	var connect *pgconn.ConnectError
	var netOp *net.OpError
	return errors.As(err, &connect) || errors.As(err, &netOp) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF)
}
