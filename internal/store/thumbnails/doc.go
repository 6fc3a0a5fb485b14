// Package thumbnails is the store of the cover queue: admission of covers
// and cover hashes (the scheduler, the API), what the cover renderer reads
// and records, and the cleanup of covers no file needs any more. The lease
// rows themselves are claimed, heartbeated and ended through package store's
// lease tables. It shares the database that package store opens.
package thumbnails

import (
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// Store reads and writes the cover queue's rows of one open database.
type Store struct{ db *sqldb.DB }

// New returns the thumbnails store of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st)} }
