package store

import (
	"database/sql"

	"github.com/bindery-nas/bindery/protocol"
)

// Lease is the lease columns of every claimable row (jobs, thumbnails,
// thumbnail_cleanup_jobs, wal_maintenance_jobs): who holds it, when it last
// said so, and when it lapses.
type Lease struct {
	WorkerID          sql.NullString    `db:"worker_id"`
	WorkerHeartbeatAt protocol.NullTime `db:"worker_heartbeat_at"`
	LeaseExpiresAt    protocol.NullTime `db:"lease_expires_at"`
}

// Job is a row of jobs (scan/hash and the other protocol kinds).
type Job struct {
	ID              int64              `db:"id"`
	Kind            protocol.JobKind   `db:"kind"`
	Status          protocol.JobStatus `db:"status"`
	LibraryID       sql.NullInt64      `db:"library_id"`
	Priority        protocol.Priority  `db:"priority"`
	Payload         string             `db:"payload"`
	Progress        float64            `db:"progress"`
	ProcessedItems  int64              `db:"processed_items"`
	TotalItems      sql.NullInt64      `db:"total_items"`
	Result          sql.NullString     `db:"result"`
	Attempt         int64              `db:"attempt"`
	RetryAfter      protocol.NullTime  `db:"retry_after"`
	CancelRequested bool               `db:"cancel_requested"`
	Lease
	ErrorCode    sql.NullString    `db:"error_code"`
	ErrorMessage sql.NullString    `db:"error_message"`
	CreatedAt    protocol.Time     `db:"created_at"`
	UpdatedAt    protocol.Time     `db:"updated_at"`
	StartedAt    protocol.NullTime `db:"started_at"`
	FinishedAt   protocol.NullTime `db:"finished_at"`
}

// Thumbnail is a row of thumbnails.
type Thumbnail struct {
	ID            int64                    `db:"id"`
	FileID        int64                    `db:"file_id"`
	LibraryID     int64                    `db:"library_id"`
	GroupKey      string                   `db:"group_key"`
	MediaType     protocol.MediaType       `db:"media_type"`
	Format        protocol.ImageFormat     `db:"format"`
	Status        protocol.ThumbnailStatus `db:"status"`
	OutputRelPath string                   `db:"output_relpath"`
	Width         sql.NullInt64            `db:"width"`
	Height        sql.NullInt64            `db:"height"`
	BytesSize     sql.NullInt64            `db:"bytes_size"`
	Lease
	ErrorCode      sql.NullString    `db:"error_code"`
	ErrorMessage   sql.NullString    `db:"error_message"`
	ErrorCount     int64             `db:"error_count"`
	RecoveredCount int64             `db:"recovered_count"` // stale leases recovered (MaxRecoveries)
	RetryAfter     protocol.NullTime `db:"retry_after"`
	CreatedAt      protocol.Time     `db:"created_at"`
	UpdatedAt      protocol.Time     `db:"updated_at"`
	StartedAt      protocol.NullTime `db:"started_at"`
	FinishedAt     protocol.NullTime `db:"finished_at"`
}

// CleanupJob is a row of thumbnail_cleanup_jobs.
type CleanupJob struct {
	ID             int64                  `db:"id"`
	GroupKey       string                 `db:"group_key"`
	Status         protocol.CleanupStatus `db:"status"`
	ExecuteAfter   protocol.Time          `db:"execute_after"`
	DeletedFiles   int64                  `db:"deleted_files"`
	DeletedRows    int64                  `db:"deleted_rows"`
	RecoveredCount int64                  `db:"recovered_count"` // stale leases recovered (MaxRecoveries)
	Lease
	ErrorCode    sql.NullString    `db:"error_code"`
	ErrorMessage sql.NullString    `db:"error_message"`
	CreatedAt    protocol.Time     `db:"created_at"`
	UpdatedAt    protocol.Time     `db:"updated_at"`
	FinishedAt   protocol.NullTime `db:"finished_at"`
}

// WALJob is a row of wal_maintenance_jobs.
type WALJob struct {
	ID                  int64                   `db:"id"`
	RequestedMode       protocol.CheckpointMode `db:"requested_mode"`
	Reason              string                  `db:"reason"`
	Status              protocol.WALStatus      `db:"status"`
	ExecuteAfter        protocol.Time           `db:"execute_after"`
	RetryCount          int64                   `db:"retry_count"`
	RetryAfter          protocol.NullTime       `db:"retry_after"`
	CheckpointBusy      sql.NullInt64           `db:"checkpoint_busy"`
	CheckpointLogFrames sql.NullInt64           `db:"checkpoint_log_frames"`
	CheckpointedFrames  sql.NullInt64           `db:"checkpointed_frames"`
	Lease
	ErrorCode    sql.NullString    `db:"error_code"`
	ErrorMessage sql.NullString    `db:"error_message"`
	CreatedAt    protocol.Time     `db:"created_at"`
	UpdatedAt    protocol.Time     `db:"updated_at"`
	StartedAt    protocol.NullTime `db:"started_at"`
	FinishedAt   protocol.NullTime `db:"finished_at"`
}
