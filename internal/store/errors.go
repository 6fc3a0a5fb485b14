package store

import "github.com/bindery-nas/bindery/internal/store/internal/sqldb"

// Application errors of the store (defined in package sqldb, which every
// store package shares). The API maps each to one HTTP status in one
// place; callers compare with errors.Is, never by string.
var (
	// ErrNotFound: the row does not exist.
	ErrNotFound = sqldb.ErrNotFound
	// ErrConflict: the row exists but its state forbids the change.
	ErrConflict = sqldb.ErrConflict
	// ErrQueueFull: admission refused because a queue is at capacity.
	ErrQueueFull = sqldb.ErrQueueFull
	// ErrNotOwner: a lease-path write by a worker that no longer owns the
	// row (recovered, cancelled or finished by someone else).
	ErrNotOwner = sqldb.ErrNotOwner
	// ErrLeaseLost: see sqldb.ErrLeaseLost.
	ErrLeaseLost = sqldb.ErrLeaseLost
	// ErrInvalidRequest: see sqldb.ErrInvalidRequest.
	ErrInvalidRequest = sqldb.ErrInvalidRequest
)
