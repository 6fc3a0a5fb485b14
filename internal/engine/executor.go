// Package engine is workerd's job engine: it claims rows of the four lease
// tables, heartbeats while an executor works, finishes rows with a terminal
// state and recovers stale leases. Executors plug in behind the small
// interfaces below and never write lease fields themselves.
package engine

import (
	"context"

	"github.com/bindery-nas/bindery/internal/model"
)

// Reporter receives an executor's progress. The engine writes the latest
// figures on its next heartbeat (never more than one write per heartbeat).
type Reporter interface {
	Progress(processed, total int64)
}

// JobExecutor runs one claimed scan or hash job. ctx is cancelled when the
// job's cancel is requested, when the lease is lost, or on shutdown; the
// executor returns promptly, keeping what it has committed consistent.
// A returned *protocol.Error decides the job's error_code. The result map
// is stored as the job's result JSON (counts).
type JobExecutor interface {
	Execute(ctx context.Context, job model.Job, rep Reporter) (result map[string]int64, err error)
}

// Reconciler is a JobExecutor whose jobs may leave work on disk that only
// a run of the job can settle (a delete job's intents). A job cancelled
// before it runs again is reconciled before it ends cancelled.
type Reconciler interface {
	Reconcile(ctx context.Context, job model.Job) error
}

// ThumbnailResult is what a successful render reports.
type ThumbnailResult struct {
	Width, Height, BytesSize int64
	// CoverHash is the cover's 64-bit dHash as a signed integer; nil
	// when the executor computes none.
	CoverHash *int64
}

// ThumbnailExecutor renders one claimed thumbnail row. A *protocol.Error
// decides the row's error_code (decode_error, source_missing, ...).
type ThumbnailExecutor interface {
	Render(ctx context.Context, t model.Thumbnail) (ThumbnailResult, error)
}

// CleanupExecutor runs one claimed thumbnail cleanup row.
type CleanupExecutor interface {
	Clean(ctx context.Context, c model.CleanupJob) (deletedFiles, deletedRows int64, err error)
}

// CheckpointResult is the three figures of PRAGMA wal_checkpoint.
type CheckpointResult struct {
	Busy, LogFrames, CheckpointedFrames int64
}

// CheckpointExecutor runs one claimed WAL maintenance row.
type CheckpointExecutor interface {
	Checkpoint(ctx context.Context, w model.WALJob) (CheckpointResult, error)
}
