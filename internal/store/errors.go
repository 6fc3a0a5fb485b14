package store

import "errors"

// Application errors of the store. The API maps each to one HTTP status in
// one place; callers compare with errors.Is, never by string.
var (
	// ErrNotFound: the row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the row exists but its state forbids the change.
	ErrConflict = errors.New("conflict")
	// ErrQueueFull: admission refused because a queue is at capacity.
	ErrQueueFull = errors.New("queue full")
	// ErrNotOwner: a lease-path write by a worker that no longer owns the
	// row (recovered, cancelled or finished by someone else).
	ErrNotOwner = errors.New("lease not owned")
)
