package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// Folder-scoped scans (issue 39). A scan request may name folders of its
// library; the queue keeps one entry per (kind, library) whose paths are
// the union of every request merged into it, NULL (the whole library) as
// soon as one library-wide request arrives. A pending job not yet claimed
// is widened the same way; a running job that does not cover a request
// leaves it queued behind it, so a change seen while a scan runs is never
// lost.

// absorbIntoActive returns the active job when it covers the request, or
// a pending one after widening its payload to cover it; nil when the
// request must be queued (no active job, or a running one that does not
// cover it). A library-wide request finding a running library-wide scan
// is answered by that scan, as before folder scopes existed.
func absorbIntoActive(ctx context.Context, tx *sqlx.Tx, job *model.Job, r JobRequest, now string) (*model.Job, error) {
	if job == nil || r.Kind != protocol.JobKindScan {
		return job, nil
	}
	var p protocol.ScanPayload
	if err := protocol.DecodePayload(job.Payload, &p); err != nil {
		return job, nil // the worker fails it; a request cannot repair it
	}
	running := job.Status == protocol.JobRunning
	switch {
	case running && p.Paths == nil && r.Paths == nil:
		return job, nil
	case running:
		return nil, nil
	case protocol.ScanPathsCover(p.Paths, r.Paths):
		return job, nil
	}
	p.Paths = protocol.MergeScanPaths(p.Paths, r.Paths)
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var widened model.Job
	err = tx.GetContext(ctx, &widened, `UPDATE jobs SET payload = ?, updated_at = ?
		WHERE id = ? AND status = 'pending' RETURNING *`, string(raw), now, job.ID)
	if err != nil {
		return nil, fmt.Errorf("widen job %d: %w", job.ID, err)
	}
	return &widened, nil
}

// scanPayload is the payload of a new scan or hash job of that scope.
func scanPayload(paths []string) string {
	if paths == nil {
		return "{}"
	}
	raw, _ := json.Marshal(protocol.ScanPayload{Paths: paths})
	return string(raw)
}

func encodeScanPaths(paths []string) sql.NullString {
	if paths == nil {
		return sql.NullString{}
	}
	raw, _ := json.Marshal(paths)
	return sql.NullString{String: string(raw), Valid: true}
}

func decodeScanPaths(col sql.NullString) ([]string, error) {
	if !col.Valid {
		return nil, nil
	}
	var paths []string
	if err := json.Unmarshal([]byte(col.String), &paths); err != nil {
		return nil, fmt.Errorf("scan_requests.paths: %w", err)
	}
	return protocol.NormalizeScanPaths(paths)
}

// ScanPaths is the entry's folder scope, nil for the whole library.
func (q ScanRequest) ScanPaths() []string {
	paths, _ := decodeScanPaths(q.Paths)
	return paths
}
