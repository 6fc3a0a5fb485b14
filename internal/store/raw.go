package store

import (
	"database/sql"
	"net/url"

	"github.com/bindery-nas/bindery/internal/store/internal/pools"
	"github.com/jmoiron/sqlx"
)

// The raw-SQL helpers of tests (storetest.Exec, QueryInt, …) reach the
// pools through package pools, so the product type has no such methods.
func init() {
	pools.Of = func(st any) (w, r *sqlx.DB) {
		s := st.(*Store)
		return s.w, s.r
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
	if engineOf(path) == enginePostgres {
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
