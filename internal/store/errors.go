package store

import "errors"

// Codes of the store's coded errors (protocol.Error.Code). The admin API's
// table of codes (internal/api/codes.go) gives each its HTTP status and
// meaning.
const (
	CodeFileNotFound      = "file_not_found"
	CodeJobNotFound       = "job_not_found"
	CodeLibraryNotFound   = "library_not_found"
	CodeScanNotFound      = "scan_not_found"
	CodeSeriesNotFound    = "series_not_found"
	CodeThumbnailNotFound = "thumbnail_not_found"
	// CodeCoverNotReady: a cover was asked for that was never rendered (or
	// whose file has no ready thumbnail row).
	CodeCoverNotReady = "cover_not_ready"
	CodeJobTerminal   = "job_terminal"
	CodeLibraryExists = "library_exists"
	CodeLibraryBusy   = "library_busy"
	CodeNoWAL         = "checkpoint_not_applicable"
)

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
