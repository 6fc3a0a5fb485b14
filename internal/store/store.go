// Package store opens the database and holds most of the SQL: with the
// packages beside it (reading, feed, hashes, scanning, pgadmin), it is the only code that speaks
// SQL. It owns the two connection pools of a process (one writer, many
// readers) and the clock every timestamp is taken from, and hands both to
// its sibling packages through internal/sqldb; one file per aggregate of
// the schema.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/migrations"
	"github.com/bindery-nas/bindery/protocol"
)

// Role decides which driver a process opens the database with.
type Role int

const (
	// RoleControl is controld: policy writer, no authorizer.
	RoleControl Role = iota
	// RoleWorker is workerd: every write goes through the protocol §7
	// whitelist, enforced by an SQLite authorizer on each connection.
	RoleWorker
)

// Config configures Open. Zero values take the documented defaults.
type Config struct {
	// Path of the SQLite file, or a postgres:// URL (PostgreSQL 15+, whose
	// user is the role the process acts as). Required.
	Path string
	// Role selects the driver; default RoleControl.
	Role Role
	// BusyTimeout is SQLite's busy_timeout on every connection; default 10s.
	BusyTimeout time.Duration
	// MaxReaders bounds the reader pool; default 8.
	MaxReaders int
	// MaxWriters bounds the writer pool on PostgreSQL, where transactions
	// are serializable and run side by side; default 4. SQLite has exactly
	// one writer connection.
	MaxWriters int
	// WriterCacheMiB is the page cache of the one writer connection, in
	// MiB; default 16. The hash job's commits update indexes keyed by
	// random digests, touching pages all over them: with SQLite's default
	// 2 MiB, 100,000 first hashes were stored at 38,000 rows/s, with 64 MiB
	// at 56,000 (BenchmarkRecordHashes); 16 MiB stores them as fast
	// (63,000 against 58,000–59,000 at 64 MiB, alternating, 2026-11-26)
	// and holds workerd's peak RSS over a 100,000-file scan at 65 MB
	// instead of 117–141 MB: the cache fills as the database grows, so it
	// is most of the resident set. Reader connections read pages in index
	// order and need less: see ReaderCacheKiB.
	WriterCacheMiB int
	// ReaderCacheKiB is the page cache of each reader connection, in KiB;
	// default 0: SQLite's own (2,000 KiB). workerd sets a smaller one: up
	// to MaxReaders connections each keep a cache of their own, which
	// fills once the database is past a few MiB.
	ReaderCacheKiB int
	// Create allows Open to create a missing file; default false (workerd
	// must never create the database it is meant to share).
	Create bool
	// Now is the clock; default time.Now. Tests move it to expire leases.
	Now func() time.Time
}

// Store is an open Bindery database.
type Store struct {
	w       *sqlx.DB
	r       *sqlx.DB
	path    string
	dsn     string // the URL as given (PostgreSQL), for dedicated connections
	now     func() time.Time
	dialect dialect
	// txOptions are the write transactions' options: none on SQLite (its
	// one writer runs BEGIN IMMEDIATE), SERIALIZABLE on PostgreSQL, so
	// that the store's read-then-write transactions keep the meaning they
	// have with one writer.
	txOptions *sql.TxOptions
	// claimTxOptions are those of the job and thumbnail claims: READ
	// COMMITTED on PostgreSQL, where the claim statement locks the one row
	// it takes and skips those other claimers hold, so that concurrent
	// claims never abort one another.
	claimTxOptions *sql.TxOptions
	stop           func() // stops the database clock; nil on SQLite
}

// Open opens both pools and checks that the database is usable: an SQLite
// file, or a PostgreSQL database whose role fits the process's. It never
// migrates; see Migrate and CheckSchema.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("open: no database path")
	}
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = 10 * time.Second
	}
	if cfg.MaxReaders == 0 {
		cfg.MaxReaders = 8
	}
	if cfg.MaxWriters == 0 {
		cfg.MaxWriters = 4
	}
	if dialectOf(cfg.Path) == dialectPostgres {
		return openPostgres(ctx, cfg)
	}
	if cfg.WriterCacheMiB == 0 {
		cfg.WriterCacheMiB = 16
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if !cfg.Create {
		if _, err := os.Stat(cfg.Path); err != nil {
			return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
		}
	}
	driver := driverControl
	if cfg.Role == RoleWorker {
		driver = driverWorker
	}
	registerDrivers()
	w, err := sqlx.Open(driver, dsn(cfg, true))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	useColumns(w)
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sqlx.Open(driver, dsn(cfg, false))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	useColumns(r)
	r.SetMaxOpenConns(cfg.MaxReaders)
	r.SetMaxIdleConns(cfg.MaxReaders)
	s := &Store{w: w, r: r, path: cfg.Path, now: cfg.Now}
	if err := s.probe(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// dsn builds the connection string. Pragmas live in the DSN, never in a
// one-off Exec, so that every pooled connection gets them.
func dsn(cfg Config, writer bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(cfg.BusyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	// Prepared statements are cached per connection: the claim, heartbeat
	// and finish statements run thousands of times a second.
	q.Set("_stmt_cache_size", "64")
	if writer {
		q.Set("_cache_size", fmt.Sprint(-cfg.WriterCacheMiB*1024)) // negative: KiB
		q.Set("_journal_mode", "WAL")
		q.Set("_txlock", "immediate")
		if cfg.Create {
			q.Set("mode", "rwc")
		} else {
			q.Set("mode", "rw")
		}
	} else {
		if cfg.ReaderCacheKiB > 0 {
			q.Set("_cache_size", fmt.Sprint(-cfg.ReaderCacheKiB)) // negative: KiB
		}
		q.Set("_query_only", "1")
		q.Set("mode", "rw")
	}
	return "file:" + (&url.URL{Path: cfg.Path}).EscapedPath() + "?" + q.Encode()
}

// probe fails early, naming the file, when it is not an SQLite database.
func (s *Store) probe(ctx context.Context) error {
	var n int
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return fmt.Errorf("open %s: not a usable SQLite database: %w", s.path, err)
	}
	return nil
}

// Close closes both pools.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stop()
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

// Path is the database file, or the URL without its password.
func (s *Store) Path() string { return s.path }

// Now is the store's clock, truncated to the protocol's millisecond
// precision.
func (s *Store) Now() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func (s *Store) nowText() string { return protocol.FormatTime(s.now()) }

// Migrate applies every pending migration on a dedicated connection with
// foreign keys off (legacy tables are rebuilt), then checks them.
func Migrate(ctx context.Context, path string) error {
	if dialectOf(path) == dialectPostgres {
		return migratePostgres(ctx, path)
	}
	registerDrivers()
	q := url.Values{}
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "off")
	q.Set("_journal_mode", "WAL")
	q.Set("_txlock", "immediate")
	q.Set("mode", "rwc")
	db, err := sql.Open(driverControl, "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return fmt.Errorf("migrate %s: not a usable SQLite database: %w", path, err)
	}
	if err := migrations.Up(ctx, db); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	return nil
}

// CheckSchema returns nil only when the database is at exactly the schema
// version this binary was built with.
func (s *Store) CheckSchema(ctx context.Context) error {
	if s.dialect == dialectPostgres {
		return migrations.CheckPostgres(ctx, s.r.DB)
	}
	return migrations.Check(ctx, s.r.DB)
}

// SchemaVersion is the applied migration version.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	if s.dialect == dialectPostgres {
		return migrations.VersionPostgres(ctx, s.r.DB)
	}
	return migrations.Version(ctx, s.r.DB)
}

// IsBusy reports whether err is SQLITE_BUSY/SQLITE_LOCKED after the busy
// timeout ran out, or PostgreSQL's counterparts: a serializable transaction
// that lost to another, a deadlock, a lock not available. Each means: run
// the transaction again.
func IsBusy(err error) bool {
	switch pgCode(err) {
	case "40001", "40P01", "55P03":
		return true
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}

// IsConstraint reports whether err is a constraint violation (CHECK, NOT
// NULL, UNIQUE, FOREIGN KEY).
func IsConstraint(err error) bool {
	if strings.HasPrefix(pgCode(err), "23") {
		return true
	}
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint
}

// IsUnique reports whether err is a UNIQUE constraint violation.
func IsUnique(err error) bool {
	if pgCode(err) == "23505" {
		return true
	}
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint &&
		(se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// IsAuthDenied reports whether err is the whitelist authorizer refusing a
// statement.
func IsAuthDenied(err error) bool {
	if pgCode(err) == "42501" {
		return true
	}
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrAuth
}

// write runs fn in one write transaction on the writer pool (BEGIN
// IMMEDIATE on SQLite, SERIALIZABLE on PostgreSQL), running it again with
// backoff when SQLite stays busy beyond its busy timeout or PostgreSQL
// reports a serialization failure. fn must be safe to run again.
func (s *Store) write(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return s.writeTx(ctx, s.txOptions, fn)
}

func (s *Store) writeTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *sqlx.Tx) error) error {
	return s.retryBusy(ctx, func() error { return s.writeOnce(ctx, opts, fn) })
}

// retryBusy runs write until it succeeds or fails for a reason other than
// a lost race. SQLite already waited its busy timeout; a PostgreSQL
// transaction that lost a race is best run again at once, with jitter so
// that the losers do not meet again.
func (s *Store) retryBusy(ctx context.Context, write func() error) error {
	backoff, attempts := 50*time.Millisecond, 8
	if s.dialect == dialectPostgres {
		backoff, attempts = time.Millisecond, 16
	}
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil || !IsBusy(err) || attempt >= attempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff + rand.N(backoff)):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// writeOne runs fn, which issues exactly one statement, as a write. On
// SQLite that is a transaction of the one writer, as every write. On
// PostgreSQL the statement runs alone at READ COMMITTED, without BEGIN and
// COMMIT: the lease paths' statements match the row they change by id,
// owner and status, and PostgreSQL re-checks that WHERE clause against the
// newest version of a row another transaction changed meanwhile, so one
// statement needs no stronger isolation, and every finish, heartbeat and
// release saves two round trips.
func (s *Store) writeOne(ctx context.Context, fn func(q sqlx.ExtContext) error) error {
	if s.dialect != dialectPostgres {
		return s.write(ctx, func(tx *sqlx.Tx) error { return fn(tx) })
	}
	return s.retryBusy(ctx, func() error { return fn(s.w) })
}

func (s *Store) writeOnce(ctx context.Context, opts *sql.TxOptions, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.w.BeginTxx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
