package protocol

// Error codes written to error_code columns. They are part of the contract:
// operators and third parties match on them, so they never change meaning.
const (
	// Lease and engine.
	ErrLeaseExpired           = "lease_expired"
	ErrWorkerShutdown         = "worker_shutdown"
	ErrInvalidPayload         = "invalid_payload"
	ErrMaxAttemptsExceeded    = "max_attempts_exceeded"
	ErrCancelled              = "cancelled"
	ErrExecutorFailed         = "executor_failed"
	ErrMigrationMutexRecovery = "migration_mutex_recovery"
	ErrMigrationActiveRecover = "migration_active_recovery"

	// Files, archives and covers.
	ErrArchiveEncrypted = "archive_encrypted"
	ErrArchiveCorrupt   = "archive_corrupt"
	ErrIOError          = "io_error"
	ErrSymlinkEscape    = "symlink_outside_library"
	ErrDecodeError      = "decode_error"
	ErrSourceMissing    = "source_missing"
	ErrSourceTooLarge   = "source_too_large"
	ErrPathViolation    = "path_violation"
	ErrNoPages          = "no_pages"
	// ErrUnsupportedCompression: the archive is sound but a page is
	// compressed with a method Bindery cannot decode (the message names
	// it); the file keeps its page count.
	ErrUnsupportedCompression = "unsupported_compression"
	// ErrArchiveIncomplete: a multi-volume archive lacks a volume (the
	// message names it), or a later volume was opened as if it were a book.
	ErrArchiveIncomplete = "archive_incomplete"
	ErrLibraryMissing    = "library_missing"
	// ErrVideoUnreadable: ffprobe or ffmpeg could not read a video file
	// (corrupt, truncated, empty, no video stream); the message says why.
	ErrVideoUnreadable = "video_unreadable"
	// ErrVideoTimeout: ffprobe or ffmpeg ran past video.timeout_seconds
	// and was killed.
	ErrVideoTimeout = "video_timeout"
	// ErrReadOnlyFS: a delete job met a library mounted read-only; it stops
	// with nothing half-moved.
	ErrReadOnlyFS    = "read_only_filesystem"
	ErrRenderCrashed = "render_crashed" // the worker died rendering it, MaxRecoveries times
	// ErrRenderTimeout: a cover render ran past
	// thumbnail.render_timeout_seconds and was cancelled.
	ErrRenderTimeout  = "render_timeout"
	ErrCleanupCrashed = "cleanup_crashed" // the worker died cleaning up, MaxRecoveries times

	// WAL maintenance.
	ErrCheckpointBusy   = "checkpoint_busy"
	ErrCheckpointFailed = "checkpoint_failed"
)

// LeaseExpiredMessage is the deterministic message written by every recovery
// path, so that two recoverers racing produce byte-identical rows.
const LeaseExpiredMessage = "lease expired: worker stopped heartbeating"

// ErrLeaseLost is the code of a job recovered from a worker that is alive
// (it refreshed its workers row after the lease ran out, or stopped
// cleanly) and merely lost the database for longer than its lease: like
// worker_shutdown, it is not counted as an attempt.
const ErrLeaseLost = "lease_lost"

// LeaseLostMessage goes with ErrLeaseLost.
const LeaseLostMessage = "lease lost: the worker was cut off from the database longer than its lease"
