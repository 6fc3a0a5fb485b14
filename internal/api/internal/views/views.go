// Package views holds the JSON views of the store's rows that the API's
// packages render: each a type (FileJSON, SeriesJSON, …) and a function
// that makes it from the row (File, Series, …). Timestamps are
// protocol.Time, which goes out as RFC 3339 UTC with milliseconds; NULL
// columns go out as null. It imports no package of the API.
package views

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/watch"
	"github.com/bindery-nas/bindery/protocol"
)

// nsTime renders a file mtime (Unix nanoseconds) in RFC 3339 UTC.
func nsTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// rawObject renders a JSON text column as JSON, or null when it is empty or
// not valid JSON.
func rawObject(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

// leaseJSON is the lease of a claimable row (jobs, thumbnails): who holds
// it and until when. Embedded, its fields stand in the row's own object.
type leaseJSON struct {
	WorkerID          *string        `json:"worker_id"`
	WorkerHeartbeatAt *protocol.Time `json:"worker_heartbeat_at"`
	LeaseExpiresAt    *protocol.Time `json:"lease_expires_at"`
}

func leaseView(l model.Lease) leaseJSON {
	return leaseJSON{WorkerID: l.WorkerID, WorkerHeartbeatAt: l.WorkerHeartbeatAt, LeaseExpiresAt: l.LeaseExpiresAt}
}

// runTimesJSON closes the object of a row that runs (jobs, thumbnails,
// checkpoints): when it was created, last changed, started and finished.
type runTimesJSON struct {
	CreatedAt  protocol.Time  `json:"created_at"`
	UpdatedAt  protocol.Time  `json:"updated_at"`
	StartedAt  *protocol.Time `json:"started_at"`
	FinishedAt *protocol.Time `json:"finished_at"`
}

func runTimesView(created, updated protocol.Time, started, finished *protocol.Time) runTimesJSON {
	return runTimesJSON{CreatedAt: created, UpdatedAt: updated, StartedAt: started, FinishedAt: finished}
}

type LibraryJSON struct {
	ID                  int64                 `json:"id"`
	Name                string                `json:"name"`
	Path                string                `json:"path"`
	ScanIntervalMinutes int64                 `json:"scan_interval_minutes"`
	AllowDelete         bool                  `json:"allow_delete"`
	AllowUnlink         bool                  `json:"allow_unlink"`
	Media               protocol.LibraryMedia `json:"media"`
	LastScanRequestedAt *protocol.Time        `json:"last_scan_requested_at"`
	CreatedAt           protocol.Time         `json:"created_at"`
	UpdatedAt           protocol.Time         `json:"updated_at"`
	FileCount           *int64                `json:"file_count,omitempty"`
	MissingCount        *int64                `json:"missing_count,omitempty"`
	SeriesCount         *int64                `json:"series_count,omitempty"`
	LastScan            *ScanJSON             `json:"last_scan,omitempty"`
	Watch               protocol.WatchMode    `json:"watch"`
	Watcher             *watch.Status         `json:"watcher,omitempty"`
}

func Library(l model.Library) LibraryJSON {
	return LibraryJSON{ID: l.ID, Name: l.Name, Path: l.Path, ScanIntervalMinutes: l.ScanIntervalMinutes,
		AllowDelete: l.AllowDelete, AllowUnlink: l.AllowUnlink, Media: l.Media, Watch: l.Watch,
		LastScanRequestedAt: l.LastScanRequestedAt, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
}

type JobJSON struct {
	ID             int64              `json:"id"`
	Kind           protocol.JobKind   `json:"kind"`
	Status         protocol.JobStatus `json:"status"`
	LibraryID      *int64             `json:"library_id"`
	Priority       protocol.Priority  `json:"priority"`
	Progress       float64            `json:"progress"`
	ProcessedItems int64              `json:"processed_items"`
	TotalItems     *int64             `json:"total_items"`
	leaseJSON
	Attempt         int64           `json:"attempt"`
	RetryAfter      *protocol.Time  `json:"retry_after"`
	ErrorCode       *string         `json:"error_code"`
	ErrorMessage    *string         `json:"error_message"`
	Payload         json.RawMessage `json:"payload"`
	Result          json.RawMessage `json:"result"`
	CancelRequested bool            `json:"cancel_requested"`
	runTimesJSON
}

func Job(j model.Job) JobJSON {
	return JobJSON{ID: j.ID, Kind: j.Kind, Status: j.Status, LibraryID: j.LibraryID, Priority: j.Priority,
		Progress: j.Progress, ProcessedItems: j.ProcessedItems, TotalItems: j.TotalItems,
		leaseJSON: leaseView(j.Lease),
		Attempt:   j.Attempt, RetryAfter: j.RetryAfter, ErrorCode: j.ErrorCode, ErrorMessage: j.ErrorMessage,
		Payload: rawObject(j.Payload), Result: rawObject(model.Deref(j.Result)), CancelRequested: j.CancelRequested,
		runTimesJSON: runTimesView(j.CreatedAt, j.UpdatedAt, j.StartedAt, j.FinishedAt)}
}

type QueueEntryJSON struct {
	ID        int64             `json:"id"`
	Kind      protocol.JobKind  `json:"kind"`
	LibraryID *int64            `json:"library_id"`
	Priority  protocol.Priority `json:"priority"`
	Reason    string            `json:"reason"`
	// Paths: the folders a scan is scoped to, null for the whole library.
	Paths     []string      `json:"paths"`
	Position  int           `json:"position"`
	CreatedAt protocol.Time `json:"created_at"`
	UpdatedAt protocol.Time `json:"updated_at"`
}

func QueueEntry(q queue.ScanRequest, pos int) QueueEntryJSON {
	return QueueEntryJSON{ID: q.ID, Kind: q.Kind, LibraryID: q.LibraryID, Priority: q.Priority, Reason: q.Reason,
		Paths: q.ScanPaths(), Position: pos, CreatedAt: q.CreatedAt, UpdatedAt: q.UpdatedAt}
}

type CoverJSON struct {
	// Status: none, pending, running, ready or failed (the newest row's).
	Status string  `json:"status"`
	URL    *string `json:"url"`
	// Error says why the newest render failed (status failed).
	Error *AnalysisJSON `json:"error,omitempty"`
}

type SeriesRefJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type FileJSON struct {
	ID            int64             `json:"id"`
	LibraryID     int64             `json:"library_id"`
	RelativePath  string            `json:"relative_path"`
	SizeBytes     int64             `json:"size_bytes"`
	Mtime         string            `json:"mtime"`
	MtimeNS       int64             `json:"mtime_ns"`
	Format        *string           `json:"format"`
	Role          protocol.FileRole `json:"role"`
	Volumes       *int64            `json:"volumes"`
	TotalPages    *int64            `json:"total_pages"`
	Series        *SeriesRefJSON    `json:"series"`
	IsMissing     bool              `json:"is_missing"`
	MissingSince  *protocol.Time    `json:"missing_since"`
	HashAlgorithm *string           `json:"hash_algorithm"`
	ContentHash   *string           `json:"content_hash"`
	AnalysisError *AnalysisJSON     `json:"analysis_error"`
	AnalyzedAt    *protocol.Time    `json:"analyzed_at"`
	Cover         CoverJSON         `json:"cover"`
	Metadata      *MetadataJSON     `json:"metadata,omitempty"`
	Video         *VideoJSON        `json:"video,omitempty"`
	CreatedAt     protocol.Time     `json:"created_at"`
	UpdatedAt     protocol.Time     `json:"updated_at"`
}

type AnalysisJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// File is a file's row with its cover, whose URL coverURL signs.
func File(f model.File, coverURL func(fileID int64, version string) string) FileJSON {
	v := FileJSON{ID: f.ID, LibraryID: f.LibraryID, RelativePath: f.RelativePath, SizeBytes: f.SizeBytes,
		Mtime: nsTime(f.MtimeNS), MtimeNS: f.MtimeNS, Format: f.Format, Role: f.Role, Volumes: f.Volumes, TotalPages: f.TotalPages,
		IsMissing: f.IsMissing, MissingSince: f.MissingSince, HashAlgorithm: f.HashAlgorithm,
		AnalyzedAt: f.AnalyzedAt, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt,
		Cover: CoverJSON{Status: "none"}}
	if f.SeriesID != nil {
		v.Series = &SeriesRefJSON{ID: model.Deref(f.SeriesID), Name: model.Deref(f.SeriesName)}
	}
	if len(f.ContentHash) > 0 {
		h := hex.EncodeToString(f.ContentHash)
		v.ContentHash = &h
	}
	if f.AnalysisErrorCode != nil {
		v.AnalysisError = &AnalysisJSON{Code: model.Deref(f.AnalysisErrorCode), Message: model.Deref(f.AnalysisErrorMessage)}
	}
	if f.CoverStatus != nil {
		v.Cover.Status = model.Deref(f.CoverStatus)
	}
	if f.CoverErrorCode != nil {
		v.Cover.Error = &AnalysisJSON{Code: model.Deref(f.CoverErrorCode), Message: model.Deref(f.CoverErrorMessage)}
	}
	if ver := f.CoverVersion(); ver != "" {
		u := coverURL(f.ID, ver)
		v.Cover.URL = &u
	}
	return v
}

type MetadataJSON struct {
	Source         string  `json:"source"`
	Series         *string `json:"series"`
	Number         *string `json:"number"`
	Volume         *int64  `json:"volume"`
	Title          *string `json:"title"`
	Year           *int64  `json:"year"`
	Month          *int64  `json:"month"`
	Publisher      *string `json:"publisher"`
	Genre          *string `json:"genre"`
	Tags           *string `json:"tags"`
	AgeRating      *string `json:"age_rating"`
	LanguageISO    *string `json:"language_iso"`
	Writer         *string `json:"writer"`
	Penciller      *string `json:"penciller"`
	Summary        *string `json:"summary"`
	Web            *string `json:"web"`
	FrontCoverPage *int64  `json:"front_cover_page"`
	// Manga and RightToLeft as in SeriesDetailsJSON, for this book alone.
	Manga       *string       `json:"manga"`
	RightToLeft bool          `json:"right_to_left"`
	UpdatedAt   protocol.Time `json:"updated_at"`
}

func Metadata(m model.FileMetadata) *MetadataJSON {
	return &MetadataJSON{Source: m.Source, Series: m.Series, Number: m.Number, Volume: m.Volume,
		Title: m.Title, Year: m.Year, Month: m.Month, Publisher: m.Publisher,
		Genre: m.Genre, Tags: m.Tags, AgeRating: m.AgeRating, LanguageISO: m.LanguageISO,
		Writer: m.Writer, Penciller: m.Penciller, Summary: m.Summary, Web: m.Web,
		FrontCoverPage: m.FrontCoverPage, Manga: m.Manga,
		RightToLeft: protocol.Manga(model.Deref(m.Manga)).RightToLeft(), UpdatedAt: m.UpdatedAt}
}

type SeriesJSON struct {
	ID        int64         `json:"id"`
	LibraryID int64         `json:"library_id"`
	Name      string        `json:"name"`
	Publisher string        `json:"publisher"`
	Year      *int64        `json:"year"`
	Summary   *string       `json:"summary"`
	FileCount int64         `json:"file_count"`
	CreatedAt protocol.Time `json:"created_at"`
	UpdatedAt protocol.Time `json:"updated_at"`
	// GET /series/{id} only.
	Details *SeriesDetailsJSON `json:"details,omitempty"`
}

// SeriesDetailsJSON: each field from the first book in reading order that
// has it; the cover is that of the first book with one.
type SeriesDetailsJSON struct {
	Summary   *string  `json:"summary"`
	Genres    []string `json:"genres"`
	Tags      []string `json:"tags"`
	AgeRating *string  `json:"age_rating"`
	Language  *string  `json:"language"`
	Writers   []string `json:"writers"`
	// Manga is "no", "yes" or "yes_rtl" (ComicInfo <Manga>), null when
	// unknown; RightToLeft is true for yes_rtl.
	Manga       *string   `json:"manga"`
	RightToLeft bool      `json:"right_to_left"`
	Count       *int64    `json:"count"`
	Cover       CoverJSON `json:"cover"`
	CoverFile   *int64    `json:"cover_file_id"`
}

// SplitList splits a ComicInfo list ("Action, Drama") into its items.
func SplitList(s *string) []string {
	out := []string{}
	for _, p := range strings.Split(model.Deref(s), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func Series(s model.Series) SeriesJSON {
	return SeriesJSON{ID: s.ID, LibraryID: s.LibraryID, Name: s.Name, Publisher: s.Publisher, Year: s.Year,
		Summary: s.Summary, FileCount: s.FileCount, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

type ScanJSON struct {
	ID           int64                      `json:"id"`
	JobID        *int64                     `json:"job_id"`
	LibraryID    int64                      `json:"library_id"`
	Status       protocol.ScanSessionStatus `json:"status"`
	Counts       map[string]int64           `json:"counts"`
	ErrorCode    *string                    `json:"error_code"`
	ErrorMessage *string                    `json:"error_message"`
	StartedAt    protocol.Time              `json:"started_at"`
	FinishedAt   *protocol.Time             `json:"finished_at"`
}

func Scan(r model.Scan) ScanJSON {
	return ScanJSON{ID: r.ID, JobID: r.JobID, LibraryID: r.LibraryID, Status: r.Status, Counts: r.ScanCounts.Map(),
		ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

type ScanErrorJSON struct {
	ID           int64         `json:"id"`
	SessionID    int64         `json:"session_id"`
	RelativePath string        `json:"relative_path"`
	ErrorCode    string        `json:"error_code"`
	Message      string        `json:"message"`
	CreatedAt    protocol.Time `json:"created_at"`
}

func ScanError(e model.ScanErrorEntry) ScanErrorJSON {
	return ScanErrorJSON{ID: e.ID, SessionID: e.SessionID, RelativePath: e.RelativePath, ErrorCode: e.ErrorCode,
		Message: e.Message, CreatedAt: e.CreatedAt}
}

type ThumbnailJSON struct {
	ID        int64                    `json:"id"`
	FileID    int64                    `json:"file_id"`
	LibraryID int64                    `json:"library_id"`
	GroupKey  string                   `json:"group_key"`
	MediaType protocol.MediaType       `json:"media_type"`
	Format    protocol.ImageFormat     `json:"format"`
	Status    protocol.ThumbnailStatus `json:"status"`
	Width     *int64                   `json:"width"`
	Height    *int64                   `json:"height"`
	BytesSize *int64                   `json:"bytes_size"`
	leaseJSON
	ErrorCode    *string        `json:"error_code"`
	ErrorMessage *string        `json:"error_message"`
	ErrorCount   int64          `json:"error_count"`
	RetryAfter   *protocol.Time `json:"retry_after"`
	runTimesJSON
}

func Thumbnail(t model.Thumbnail) ThumbnailJSON {
	return ThumbnailJSON{ID: t.ID, FileID: t.FileID, LibraryID: t.LibraryID, GroupKey: t.GroupKey, MediaType: t.MediaType,
		Format: t.Format, Status: t.Status, Width: t.Width, Height: t.Height, BytesSize: t.BytesSize,
		leaseJSON: leaseView(t.Lease),
		ErrorCode: t.ErrorCode, ErrorMessage: t.ErrorMessage, ErrorCount: t.ErrorCount,
		RetryAfter: t.RetryAfter, runTimesJSON: runTimesView(t.CreatedAt, t.UpdatedAt, t.StartedAt, t.FinishedAt)}
}

type CleanupJSON struct {
	ID           int64                  `json:"id"`
	GroupKey     string                 `json:"group_key"`
	Status       protocol.CleanupStatus `json:"status"`
	ExecuteAfter protocol.Time          `json:"execute_after"`
	DeletedFiles int64                  `json:"deleted_files"`
	DeletedRows  int64                  `json:"deleted_rows"`
	ErrorCode    *string                `json:"error_code"`
	ErrorMessage *string                `json:"error_message"`
	CreatedAt    protocol.Time          `json:"created_at"`
	UpdatedAt    protocol.Time          `json:"updated_at"`
	FinishedAt   *protocol.Time         `json:"finished_at"`
}

func Cleanup(c model.CleanupJob) CleanupJSON {
	return CleanupJSON{ID: c.ID, GroupKey: c.GroupKey, Status: c.Status, ExecuteAfter: c.ExecuteAfter,
		DeletedFiles: c.DeletedFiles, DeletedRows: c.DeletedRows, ErrorCode: c.ErrorCode,
		ErrorMessage: c.ErrorMessage, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, FinishedAt: c.FinishedAt}
}

type CheckpointJSON struct {
	ID                  int64                   `json:"id"`
	Mode                protocol.CheckpointMode `json:"mode"`
	Reason              string                  `json:"reason"`
	Status              protocol.WALStatus      `json:"status"`
	ExecuteAfter        protocol.Time           `json:"execute_after"`
	RetryCount          int64                   `json:"retry_count"`
	RetryAfter          *protocol.Time          `json:"retry_after"`
	CheckpointBusy      *int64                  `json:"checkpoint_busy"`
	CheckpointLogFrames *int64                  `json:"checkpoint_log_frames"`
	CheckpointedFrames  *int64                  `json:"checkpointed_frames"`
	WorkerID            *string                 `json:"worker_id"`
	ErrorCode           *string                 `json:"error_code"`
	ErrorMessage        *string                 `json:"error_message"`
	runTimesJSON
}

func Checkpoint(w model.WALJob) CheckpointJSON {
	return CheckpointJSON{ID: w.ID, Mode: w.RequestedMode, Reason: w.Reason, Status: w.Status,
		ExecuteAfter: w.ExecuteAfter, RetryCount: w.RetryCount, RetryAfter: w.RetryAfter,
		CheckpointBusy: w.CheckpointBusy, CheckpointLogFrames: w.CheckpointLogFrames,
		CheckpointedFrames: w.CheckpointedFrames, WorkerID: w.WorkerID, ErrorCode: w.ErrorCode,
		ErrorMessage: w.ErrorMessage, runTimesJSON: runTimesView(w.CreatedAt, w.UpdatedAt, w.StartedAt, w.FinishedAt)}
}

type WorkerJSON struct {
	WorkerID   string         `json:"worker_id"`
	Host       string         `json:"host"`
	PID        int64          `json:"pid"`
	Version    string         `json:"version"`
	Live       bool           `json:"live"`
	StartedAt  protocol.Time  `json:"started_at"`
	LastSeenAt protocol.Time  `json:"last_seen_at"`
	StoppedAt  *protocol.Time `json:"stopped_at"`
}
