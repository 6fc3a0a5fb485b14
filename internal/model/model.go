// Package model holds the plain row types that the engine, the executors,
// the API and the event feed speak: the four kinds of leased work (Job,
// Thumbnail, CleanupJob, WALJob), their Lease and the Fence of a claim;
// the library's rows (Library, File, FileMetadata, VideoProbe, Series,
// Scan); delete plans and their outcomes; and the readers' rows (User,
// APIKey, Progress, Book).
//
// They carry protocol enums and protocol.Time, a nil pointer where the
// column is NULL, and no database tags: the store reads a column into the
// field whose name is the column's in snake case (library_id → LibraryID),
// one rule checked against the schema by the store's tests. This package
// imports nothing of the project but protocol, so any package may use it.
package model

import (
	"fmt"

	"github.com/bindery-nas/bindery/protocol"
)

// Lease is the lease columns of every claimable row: who holds it, when it
// last said so, and when it lapses.
type Lease struct {
	WorkerID          *string
	WorkerHeartbeatAt *protocol.Time
	LeaseExpiresAt    *protocol.Time
	// LeaseEpoch is raised by every claim: with the row's id and worker_id
	// it is the fencing token of the claim (Fence).
	LeaseEpoch int64
}

// Holder is the worker holding the lease, or "" when none does.
func (l Lease) Holder() string { return deref(l.WorkerID) }

// Job is a row of jobs (scan, hash, delete and the other protocol kinds).
type Job struct {
	ID              int64
	Kind            protocol.JobKind
	Status          protocol.JobStatus
	LibraryID       *int64
	Priority        protocol.Priority
	Payload         string
	Progress        float64
	ProcessedItems  int64
	TotalItems      *int64
	Result          *string
	Attempt         int64
	RetryAfter      *protocol.Time
	CancelRequested bool
	// FollowedUp: controld followed the finished job up (protocol §9.2).
	FollowedUp bool
	Lease
	ErrorCode    *string
	ErrorMessage *string
	CreatedAt    protocol.Time
	UpdatedAt    protocol.Time
	StartedAt    *protocol.Time
	FinishedAt   *protocol.Time
}

// Library is the job's library id, or 0 for a job of no library.
func (j Job) Library() int64 {
	if j.LibraryID == nil {
		return 0
	}
	return *j.LibraryID
}

// Fence returns the token of the claim that returned j.
func (j Job) Fence() Fence { return j.Lease.fence(LeaseJobs, j.ID) }

// Thumbnail is a row of thumbnails: one cover to render.
type Thumbnail struct {
	ID            int64
	FileID        int64
	LibraryID     int64
	GroupKey      string
	MediaType     protocol.MediaType
	Format        protocol.ImageFormat
	Status        protocol.ThumbnailStatus
	OutputRelpath string
	Width         *int64
	Height        *int64
	BytesSize     *int64
	// Task is render or hash (protocol.ThumbnailTask).
	Task protocol.ThumbnailTask
	// CoverHash is the ready cover's 64-bit dHash (its bit pattern as a
	// signed integer); nil before the row is ready or for covers rendered
	// before migration 29.
	CoverHash *int64
	Lease
	ErrorCode      *string
	ErrorMessage   *string
	ErrorCount     int64
	RecoveredCount int64 // stale leases recovered (MaxRecoveries)
	RetryAfter     *protocol.Time
	CreatedAt      protocol.Time
	UpdatedAt      protocol.Time
	StartedAt      *protocol.Time
	FinishedAt     *protocol.Time
}

// Fence returns the token of the claim that returned t.
func (t Thumbnail) Fence() Fence { return t.Lease.fence(LeaseThumbnails, t.ID) }

// CleanupJob is a row of thumbnail_cleanup_jobs: the cover files of one
// group to delete.
type CleanupJob struct {
	ID             int64
	GroupKey       string
	Status         protocol.CleanupStatus
	ExecuteAfter   protocol.Time
	DeletedFiles   int64
	DeletedRows    int64
	RecoveredCount int64 // stale leases recovered (MaxRecoveries)
	Lease
	ErrorCode    *string
	ErrorMessage *string
	CreatedAt    protocol.Time
	UpdatedAt    protocol.Time
	FinishedAt   *protocol.Time
}

// Fence returns the token of the claim that returned c.
func (c CleanupJob) Fence() Fence { return c.Lease.fence(LeaseCleanup, c.ID) }

// WALJob is a row of wal_maintenance_jobs: one checkpoint to run.
type WALJob struct {
	ID                  int64
	RequestedMode       protocol.CheckpointMode
	Reason              string
	Status              protocol.WALStatus
	ExecuteAfter        protocol.Time
	RetryCount          int64
	RetryAfter          *protocol.Time
	CheckpointBusy      *int64
	CheckpointLogFrames *int64
	CheckpointedFrames  *int64
	Lease
	ErrorCode    *string
	ErrorMessage *string
	CreatedAt    protocol.Time
	UpdatedAt    protocol.Time
	StartedAt    *protocol.Time
	FinishedAt   *protocol.Time
}

// Fence returns the token of the claim that returned w.
func (w WALJob) Fence() Fence { return w.Lease.fence(LeaseWAL, w.ID) }

// LeaseTable names one of the four tables whose rows workers claim under a
// lease.
type LeaseTable string

const (
	LeaseJobs       LeaseTable = "jobs"
	LeaseThumbnails LeaseTable = "thumbnails"
	LeaseCleanup    LeaseTable = "thumbnail_cleanup_jobs"
	LeaseWAL        LeaseTable = "wal_maintenance_jobs"
)

// LeaseTables are the four lease tables.
var LeaseTables = [...]LeaseTable{LeaseJobs, LeaseThumbnails, LeaseCleanup, LeaseWAL}

// Noun names a row of the table in messages ("job 7").
func (t LeaseTable) Noun() string {
	switch t {
	case LeaseJobs:
		return "job"
	case LeaseThumbnails:
		return "thumbnail"
	case LeaseCleanup:
		return "cleanup"
	case LeaseWAL:
		return "checkpoint"
	}
	return string(t)
}

// Fence is the token of one claim of a lease row: the row, the worker that
// claimed it and the lease_epoch the claim set. Every write made for the
// claim checks it (protocol §4.1).
type Fence struct {
	Table    LeaseTable
	ID       int64
	WorkerID string
	Epoch    int64
}

func (f Fence) String() string {
	return fmt.Sprintf("%s %d (worker %s, epoch %d)", f.Table.Noun(), f.ID, f.WorkerID, f.Epoch)
}

func (l Lease) fence(t LeaseTable, id int64) Fence {
	return Fence{Table: t, ID: id, WorkerID: l.Holder(), Epoch: l.LeaseEpoch}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Deref is *p, or the zero value when p is nil (a NULL column).
func Deref[T any](p *T) T { return deref(p) }
