package events

import (
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/feed"
	"github.com/bindery-nas/bindery/protocol"
)

// Event payloads: the fields a dashboard needs to update a row in place;
// GET the resource for the rest. Timestamps are RFC 3339 UTC.

type jobData struct {
	ID              int64              `json:"id"`
	Kind            protocol.JobKind   `json:"kind"`
	Status          protocol.JobStatus `json:"status"`
	LibraryID       *int64             `json:"library_id"`
	Progress        float64            `json:"progress"`
	ProcessedItems  int64              `json:"processed_items"`
	TotalItems      *int64             `json:"total_items"`
	CancelRequested bool               `json:"cancel_requested"`
	ErrorCode       *string            `json:"error_code"`
	UpdatedAt       protocol.Time      `json:"updated_at"`
}

func jobEvent(j model.Job) jobData {
	return jobData{ID: j.ID, Kind: j.Kind, Status: j.Status, LibraryID: j.LibraryID, Progress: j.Progress,
		ProcessedItems: j.ProcessedItems, TotalItems: j.TotalItems, CancelRequested: j.CancelRequested,
		ErrorCode: j.ErrorCode, UpdatedAt: j.UpdatedAt}
}

type thumbnailData struct {
	ID        int64                    `json:"id"`
	FileID    int64                    `json:"file_id"`
	LibraryID int64                    `json:"library_id"`
	Status    protocol.ThumbnailStatus `json:"status"`
	Format    protocol.ImageFormat     `json:"format"`
	ErrorCode *string                  `json:"error_code"`
	UpdatedAt protocol.Time            `json:"updated_at"`
}

func thumbnailEvent(t model.Thumbnail) thumbnailData {
	return thumbnailData{ID: t.ID, FileID: t.FileID, LibraryID: t.LibraryID, Status: t.Status, Format: t.Format,
		ErrorCode: t.ErrorCode, UpdatedAt: t.UpdatedAt}
}

type scanErrorData struct {
	ID           int64  `json:"id"`
	SessionID    int64  `json:"session_id"`
	LibraryID    int64  `json:"library_id"`
	JobID        *int64 `json:"job_id"`
	RelativePath string `json:"relative_path"`
	ErrorCode    string `json:"error_code"`
	Message      string `json:"message"`
}

func scanErrorEvent(e feed.ScanErrorEvent) scanErrorData {
	return scanErrorData{ID: e.ID, SessionID: e.SessionID, LibraryID: e.LibraryID, JobID: e.JobID,
		RelativePath: e.RelativePath, ErrorCode: e.ErrorCode, Message: e.Message}
}
