// Package scanning is the store of the scan job: the files a walk finds
// and changes, moves and purges, what analysing each one found (its
// ComicInfo metadata and video probe), and the scan session with its
// counts and errors. It shares the database that package store opens.
package scanning

import (
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// Store reads and writes the scan job's rows of one open database.
type Store struct{ db *sqldb.DB }

// New returns the scan store of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st)} }
