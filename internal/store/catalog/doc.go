// Package catalog is the store of the library as the admin API lists it:
// files, their metadata, covers and video probes, series, and scan
// sessions with their errors. It only reads; the scan job writes these
// rows through package scanning. It shares the database that package
// store opens.
package catalog

import (
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// Store reads the library's rows of one open database.
type Store struct{ db *sqldb.DB }

// New returns the catalog store of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st)} }
