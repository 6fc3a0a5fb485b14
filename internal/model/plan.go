package model

import "github.com/bindery-nas/bindery/protocol"

// Plan is a row of delete_plans.
type Plan struct {
	ID          int64
	Policy      protocol.KeepPolicy
	Action      protocol.DeleteAction
	Request     string
	GroupCount  int64
	RemoveCount int64
	BytesFreed  int64
	JobID       *int64
	// TrashJobID is, for a restore plan, the delete job whose trash it
	// moves back.
	TrashJobID *int64
	CreatedAt  protocol.Time
	ExpiresAt  protocol.Time
	ExecutedAt *protocol.Time
	// GroupKind is what its groups are (bytes or same_pages).
	GroupKind protocol.PlanKind
}

// PlanFile is a row of delete_plan_files: one member of a planned group
// with the identity the plan saw.
type PlanFile struct {
	Seq           int64
	GroupSeq      int64
	FileID        int64
	LibraryID     int64
	RelativePath  string
	Decision      protocol.PlanDecision
	SizeBytes     int64
	MtimeNS       int64
	HashAlgorithm protocol.HashAlgorithm
	ContentHash   []byte
	// LibraryPath is the library's folder when the plan was made (nil in
	// plans older than migration 20).
	LibraryPath *string
	// GroupKey is a same_pages group's key (nil in other plans).
	GroupKey []byte
}

// DeleteResult is a row of delete_outcomes: what a delete job did with one
// planned copy.
type DeleteResult struct {
	JobID   int64
	FileID  int64
	Outcome protocol.DeleteOutcome
	Message string
	// TrashPath is where a trashed copy went, relative to its library.
	TrashPath *string
	CreatedAt protocol.Time
}
