package views

import (
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// The views of the store's figure structs. Their fields match the store's
// one for one, so a conversion is the whole view; the JSON names live here,
// not in the store.

type DuplicateGroupJSON struct {
	GroupKey       string `json:"group_key"`
	HashAlgorithm  string `json:"hash_algorithm"`
	ContentHashHex string `json:"content_hash"`
	FileCount      int64  `json:"file_count"`
	TotalSizeBytes int64  `json:"total_size_bytes"`
	WastedBytes    int64  `json:"wasted_bytes"`
}

func DuplicateGroup(g duplicates.DuplicateGroup) DuplicateGroupJSON { return DuplicateGroupJSON(g) }

type DuplicateFileJSON struct {
	ID           int64             `json:"id"`
	LibraryID    int64             `json:"library_id"`
	RelativePath string            `json:"relative_path"`
	SizeBytes    int64             `json:"size_bytes"`
	MtimeNS      int64             `json:"mtime_ns"`
	Role         protocol.FileRole `json:"role"`
}

func DuplicateFile(f duplicates.DuplicateFile) DuplicateFileJSON { return DuplicateFileJSON(f) }

type RecoverJSON struct {
	Jobs       int64 `json:"jobs"`
	Thumbnails int64 `json:"thumbnails"`
	Cleanup    int64 `json:"cleanup"`
	WAL        int64 `json:"wal"`
	Total      int64 `json:"total"`
}

func Recover(n leases.RecoverCounts) RecoverJSON {
	return RecoverJSON{Jobs: n.Jobs, Thumbnails: n.Thumbnails, Cleanup: n.Cleanup, WAL: n.WAL, Total: n.Total()}
}

type ThumbnailMetricsJSON struct {
	Pending              int64              `json:"pending"`
	Running              int64              `json:"running"`
	Ready                int64              `json:"ready"`
	Failed               int64              `json:"failed"`
	RetryBacklog         int64              `json:"retry_backlog"`
	CleanupPending       int64              `json:"cleanup_pending"`
	CleanupRunning       int64              `json:"cleanup_running"`
	CleanupOverdue       int64              `json:"cleanup_overdue"`
	MaxCleanupLagSeconds float64            `json:"max_cleanup_lag_seconds"`
	Crashed              []CrashedCoverJSON `json:"crashed"`
}

type CrashedCoverJSON struct {
	ThumbnailID  int64         `json:"thumbnail_id"`
	FileID       int64         `json:"file_id"`
	RelativePath string        `json:"relative_path"`
	FinishedAt   protocol.Time `json:"finished_at"`
}

func ThumbnailMetrics(m thumbnails.ThumbnailMetrics) ThumbnailMetricsJSON {
	crashed := make([]CrashedCoverJSON, 0, len(m.Crashed))
	for _, c := range m.Crashed {
		v := CrashedCoverJSON(c)
		v.FinishedAt = c.FinishedAt
		crashed = append(crashed, v)
	}
	return ThumbnailMetricsJSON{Pending: m.Pending, Running: m.Running, Ready: m.Ready, Failed: m.Failed,
		RetryBacklog: m.RetryBacklog, CleanupPending: m.CleanupPending, CleanupRunning: m.CleanupRunning,
		CleanupOverdue: m.CleanupOverdue, MaxCleanupLagSeconds: m.MaxCleanupLagSeconds, Crashed: crashed}
}
