package views

import (
	"encoding/hex"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

type PlanSummaryJSON struct {
	ID          int64                 `json:"id"`
	Kind        protocol.PlanKind     `json:"kind"`
	Policy      protocol.KeepPolicy   `json:"policy"`
	Action      protocol.DeleteAction `json:"action"`
	TrashJobID  *int64                `json:"trash_job_id"`
	GroupCount  int64                 `json:"group_count"`
	RemoveCount int64                 `json:"remove_count"`
	BytesFreed  int64                 `json:"bytes_freed"`
	JobID       *int64                `json:"job_id"`
	CreatedAt   protocol.Time         `json:"created_at"`
	ExpiresAt   protocol.Time         `json:"expires_at"`
	ExecutedAt  *protocol.Time        `json:"executed_at"`
}

type PlanJSON struct {
	PlanSummaryJSON
	Groups []PlanGroupJSON `json:"groups"`
	// Trash lists the files a restore or purge plan acts on.
	Trash []PlanFileJSON `json:"trash,omitempty"`
}

type PlanGroupJSON struct {
	GroupKey string         `json:"group_key"`
	Keep     PlanFileJSON   `json:"keep"`
	Remove   []PlanFileJSON `json:"remove"`
}

// PlanFileJSON is one planned file; outcome, message and trash_path are
// set once the plan's job has dealt with a copy.
type PlanFileJSON struct {
	FileID       int64                   `json:"file_id"`
	LibraryID    int64                   `json:"library_id"`
	RelativePath string                  `json:"relative_path"`
	SizeBytes    int64                   `json:"size_bytes"`
	MtimeNS      int64                   `json:"mtime_ns"`
	Outcome      *protocol.DeleteOutcome `json:"outcome,omitempty"`
	Message      *string                 `json:"message,omitempty"`
	TrashPath    *string                 `json:"trash_path,omitempty"`
	// Later is what a restore or purge did since with a trashed copy.
	Later *protocol.DeleteOutcome `json:"later,omitempty"`
}

func PlanSummary(p model.Plan) PlanSummaryJSON {
	return PlanSummaryJSON{ID: p.ID, Kind: p.GroupKind, Policy: p.Policy, Action: p.Action, TrashJobID: p.TrashJobID, GroupCount: p.GroupCount, RemoveCount: p.RemoveCount,
		BytesFreed: p.BytesFreed, JobID: p.JobID, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
		ExecutedAt: p.ExecutedAt}
}

func Plan(p model.Plan, files []model.PlanFile, results []model.DeleteResult, fates map[int64]protocol.DeleteOutcome) PlanJSON {
	byFile := make(map[int64]model.DeleteResult, len(results))
	for _, r := range results {
		byFile[r.FileID] = r
	}
	v := PlanJSON{PlanSummaryJSON: PlanSummary(p), Groups: []PlanGroupJSON{}}
	for _, f := range files {
		pf := PlanFileJSON{FileID: f.FileID, LibraryID: f.LibraryID, RelativePath: f.RelativePath, SizeBytes: f.SizeBytes, MtimeNS: f.MtimeNS}
		if f.Decision == protocol.DecisionKeep {
			key := protocol.GroupKey{Algorithm: f.HashAlgorithm, Hash: f.ContentHash}.String()
			if f.GroupKey != nil { // a same_pages group: its key as /duplicates/books lists it
				key = hex.EncodeToString(f.GroupKey)
			}
			v.Groups = append(v.Groups, PlanGroupJSON{GroupKey: key, Keep: pf, Remove: []PlanFileJSON{}})
			continue
		}
		if r, ok := byFile[f.FileID]; ok {
			o, msg := r.Outcome, r.Message
			pf.Outcome, pf.Message, pf.TrashPath = &o, &msg, r.TrashPath
		}
		if later, ok := fates[f.FileID]; ok {
			pf.Later = &later
		}
		if f.Decision != protocol.DecisionRemove || len(v.Groups) == 0 {
			v.Trash = append(v.Trash, pf)
			continue
		}
		g := &v.Groups[len(v.Groups)-1]
		g.Remove = append(g.Remove, pf)
	}
	return v
}
