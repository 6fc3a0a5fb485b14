// Package storetest holds test helpers shared by every package that needs a
// real, migrated SQLite file.
package storetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
)

// Clock is a settable clock for tests that move time to expire leases.
type Clock struct{ t time.Time }

// NewClock starts at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *Clock) Now() time.Time          { return c.t }
func (c *Clock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// MustMigrate creates and migrates a fresh database: a file under tb's temp
// dir, or, when BINDERY_TEST_DB=postgres, a database on the test binary's
// private PostgreSQL server (see Postgres). It returns what BINDERY_DB would
// hold: the path or the URL.
func MustMigrate(tb testing.TB) string {
	tb.Helper()
	if Postgres() {
		return mustMigratePostgres(tb)
	}
	path := filepath.Join(tb.TempDir(), "bindery.db")
	if err := store.Migrate(context.Background(), path); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	return path
}

// MustOpen opens path with the given role and closes it when the test ends.
// now may be nil for the real clock. On PostgreSQL the worker role connects
// as the database's worker role, as workerd must.
func MustOpen(tb testing.TB, path string, role store.Role, now func() time.Time) *store.Store {
	tb.Helper()
	if role == store.RoleWorker && Postgres() {
		path = workerURL(tb, path)
	}
	s, err := store.Open(context.Background(), store.Config{Path: path, Role: role, Now: now})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// MustOpenDB migrates a fresh database and opens it as controld and as
// workerd, both on the same file.
func MustOpenDB(tb testing.TB) (control, worker *store.Store, path string) {
	tb.Helper()
	path = MustMigrate(tb)
	return MustOpen(tb, path, store.RoleControl, nil), MustOpen(tb, path, store.RoleWorker, nil), path
}

// ClockedDB is a fresh migrated database opened as controld and as workerd,
// both on one settable clock, so that a test can expire leases and pass
// retry_after by moving time instead of sleeping.
type ClockedDB struct {
	Path            string
	Control, Worker *store.Store
	Clock           *Clock
}

// MustOpenClockedDB migrates a fresh database and opens it as controld and
// as workerd on a NewClock.
func MustOpenClockedDB(tb testing.TB) ClockedDB {
	tb.Helper()
	db := ClockedDB{Path: MustMigrate(tb), Clock: NewClock()}
	db.Control = MustOpen(tb, db.Path, store.RoleControl, db.Clock.Now)
	db.Worker = MustOpen(tb, db.Path, store.RoleWorker, db.Clock.Now)
	return db
}
