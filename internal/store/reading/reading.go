// Package reading is the store of the reader side of the API: reader
// accounts and their API keys, reading progress, the lists a reader
// browses (libraries, series, books, on deck) and search. Every read is
// narrowed to the libraries the reader was granted. Only the API uses it;
// it shares the database that package store opens.
package reading

import (
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// Store reads and writes the reader side's rows of one open database.
type Store struct{ db *sqldb.DB }

// New returns the reading store of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st)} }
