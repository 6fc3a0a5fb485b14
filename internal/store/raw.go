package store

import (
	"context"
	"database/sql"
	"net/url"

	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/jmoiron/sqlx"
)

// The store's packages (and the raw-SQL helpers of tests, storetest.Exec,
// QueryInt, …) reach the open database through package sqldb, so the
// product type has no method that hands out its pools.
func init() {
	sqldb.Of = func(st any) *sqldb.DB {
		s := st.(*Store)
		db := &sqldb.DB{W: s.w, R: s.r, Postgres: s.dialect == dialectPostgres, Now: s.Now, Write: s.write,
			WriteOne: s.writeOne, WriteClaim: func(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
				return s.writeTx(ctx, s.claimTxOptions, fn)
			}}
		if db.Postgres {
			db.ListenURL, _ = pgURL(s.dsn, false) // Open parsed it already
		}
		return db
	}
}

// OpenRaw opens the database as a third party holds it: one plain
// database/sql handle, no whitelist and none of the store's pools, with the
// store's `?` placeholders on either engine. For tests and tools.
func OpenRaw(path string) (*sql.DB, error) { return openRaw(path, false) }

// OpenReadOnly is OpenRaw for a monitoring tool: SQLite opened with
// mode=ro, PostgreSQL with read-only transactions.
func OpenReadOnly(path string) (*sql.DB, error) { return openRaw(path, true) }

func openRaw(path string, readOnly bool) (*sql.DB, error) {
	if dialectOf(path) == dialectPostgres {
		registerPostgres()
		u, err := pgURL(path, readOnly)
		if err != nil {
			return nil, err
		}
		return sql.Open(driverPostgres, u)
	}
	registerDrivers()
	mode := ""
	if readOnly {
		mode = "mode=ro&"
	}
	return sql.Open(driverControl, "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+mode+"_busy_timeout=10000")
}
