// Package queue is the store of the job queue as the control plane keeps
// it: requests for jobs and the scan queue behind them, scheduled scans and
// the follow-ups of finished jobs, retries, retention of old rows, and the
// admin's list and cancel of jobs. Workers claim and end the jobs through
// package store's lease tables. It shares the database that package store
// opens.
package queue

import (
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// Store reads and writes the job queue's rows of one open database.
type Store struct{ db *sqldb.DB }

// New returns the queue store of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st)} }
