// Package hashes is the store of the hash job: which files are due a hash
// and which are candidates for a duplicate group, the hashes and partial
// hashes it records, the page digests of the books that may be the same
// book, the shared read budget, and the hash state the API reports. It
// shares the database that package store opens.
package hashes

import (
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// Store reads and writes the hash job's rows of one open database.
type Store struct {
	db *sqldb.DB
	// fewDueMax: see fewDue.
	fewDueMax int
}

// New returns the hash store of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st), fewDueMax: fewDueMax} }
