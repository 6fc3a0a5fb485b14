package store

import (
	"database/sql"
	"strings"
	"sync"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/protocol"
)

const (
	driverControl = "bindery_sqlite3"
	driverWorker  = "bindery_sqlite3_worker"
)

var registerOnce sync.Once

// registerDrivers registers the two drivers with database/sql. The worker
// driver installs the whitelist authorizer on every new connection, so no
// pooled connection of workerd can write outside protocol §7.
func registerDrivers() {
	registerOnce.Do(func() {
		sql.Register(driverControl, &sqlite3.SQLiteDriver{ConnectHook: registerFuncs})
		sql.Register(driverWorker, &sqlite3.SQLiteDriver{
			ConnectHook: func(c *sqlite3.SQLiteConn) error {
				c.RegisterAuthorizer(authorizeWorker)
				return registerFuncs(c)
			},
		})
	})
}

// registerFuncs adds Bindery's SQL functions to a connection: the
// search's title rank (search_rank.go).
func registerFuncs(c *sqlite3.SQLiteConn) error {
	return c.RegisterFunc("bindery_title_rank", titleRankFunc, true)
}

// authorizeWorker is the SQLite authorizer of workerd connections. SQLite
// calls it while preparing each statement, once per written column for an
// UPDATE, once per table for INSERT and DELETE.
func authorizeWorker(op int, arg1, arg2, _ string) int {
	switch op {
	case sqlite3.SQLITE_INSERT, sqlite3.SQLITE_DELETE, sqlite3.SQLITE_UPDATE:
	default:
		return sqlite3.SQLITE_OK
	}
	if arg1 == "sqlite_master" || arg1 == "sqlite_temp_master" {
		return sqlite3.SQLITE_DENY
	}
	if searchIndex(arg1) {
		return sqlite3.SQLITE_OK
	}
	cols, insert, del, ok := protocol.WritableColumns(arg1)
	if !ok {
		return sqlite3.SQLITE_DENY
	}
	if cols == nil { // data-plane table
		return sqlite3.SQLITE_OK
	}
	switch op {
	case sqlite3.SQLITE_INSERT:
		if insert {
			return sqlite3.SQLITE_OK
		}
	case sqlite3.SQLITE_DELETE:
		if del {
			return sqlite3.SQLITE_OK
		}
	case sqlite3.SQLITE_UPDATE:
		if cols[arg2] {
			return sqlite3.SQLITE_OK
		}
	}
	return sqlite3.SQLITE_DENY
}

// searchIndex reports whether table is one of migration 26's FTS4 tables
// or their shadow tables (book_search_content, _segments, …): the
// triggers on the data-plane tables write them, so workerd's writes do.
func searchIndex(table string) bool {
	for _, t := range []string{"book_search", "series_search"} {
		if table == t || strings.HasPrefix(table, t+"_") {
			return true
		}
	}
	return false
}
