// Package duplicates is the store of what the duplicate reports show and
// what resolves them: byte-identical groups, the same book in another
// container (page digests), similar covers and common pages; the delete
// plans made from those groups, their delete jobs' intents and results,
// restores from the trash and purges of it. It shares the database that
// package store opens.
package duplicates

import (
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// Store reads and writes the duplicate reports' and delete plans' rows of
// one open database.
type Store struct{ db *sqldb.DB }

// New returns the duplicates store of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st)} }
