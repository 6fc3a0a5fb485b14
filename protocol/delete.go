package protocol

// KeepPolicy is delete_plans.policy (Bindery): how a plan picks the copy
// of each duplicate group that stays.
type KeepPolicy string

const (
	// KeepOldest keeps the copy with the smallest mtime.
	KeepOldest KeepPolicy = "oldest"
	// KeepShortestPath keeps the copy with the shortest relative path.
	KeepShortestPath KeepPolicy = "shortest_path"
	// KeepPreferLibrary keeps a copy in the given library, else the oldest.
	KeepPreferLibrary KeepPolicy = "prefer_library"
	// KeepPreferPathPrefix keeps a copy under the given folder, else the
	// oldest.
	KeepPreferPathPrefix KeepPolicy = "prefer_path_prefix"
	// KeepExplicit keeps the copy the request names for each group.
	KeepExplicit KeepPolicy = "explicit"
	// KeepPreferFormat keeps the copy whose container comes first in the
	// given order (zip > 7z > rar, say), else the oldest (migration 28).
	KeepPreferFormat KeepPolicy = "prefer_format"
	// KeepSmallest keeps the smallest file, else the oldest (migration 28).
	KeepSmallest KeepPolicy = "smallest"
)

var KeepPolicies = []KeepPolicy{KeepOldest, KeepShortestPath, KeepPreferLibrary, KeepPreferPathPrefix, KeepExplicit,
	KeepPreferFormat, KeepSmallest}

func ParseKeepPolicy(s string) (KeepPolicy, error) { return parseEnum("keep policy", s, KeepPolicies) }

// PlanKind is delete_plans.group_kind (Bindery, migration 28): what the
// groups of a plan are, and so what workerd proves before a copy moves.
type PlanKind string

const (
	// PlanBytes: groups of byte-identical copies; a copy goes only while
	// it and its keeper hold the plan's content hash.
	PlanBytes PlanKind = "bytes"
	// PlanSamePages: groups of books with equal ordered page digests in
	// other containers (GET /duplicates/books, kind same_pages); a copy
	// goes only while each file holds the bytes the plan saw and both,
	// decompressed again, have equal ordered page digests.
	PlanSamePages PlanKind = "same_pages"
)

var PlanKinds = []PlanKind{PlanBytes, PlanSamePages}

func ParsePlanKind(s string) (PlanKind, error) { return parseEnum("plan kind", s, PlanKinds) }

// PlanDecision is delete_plan_files.decision (Bindery): what a plan does
// with one of its members.
type PlanDecision string

const (
	// DecisionKeep: the group's keeper; a delete never moves it.
	DecisionKeep PlanDecision = "keep"
	// DecisionRemove: a copy the delete moves to the trash or unlinks.
	DecisionRemove PlanDecision = "remove"
	// DecisionRestore: a restore plan moves the file back from the trash.
	DecisionRestore PlanDecision = "restore"
	// DecisionPurge: a purge plan removes the trash copy for good.
	DecisionPurge PlanDecision = "purge"
)

var PlanDecisions = []PlanDecision{DecisionKeep, DecisionRemove, DecisionRestore, DecisionPurge}

// DeleteAction is delete_plans.action (Bindery): what happens to a copy.
type DeleteAction string

const (
	// ActionTrash renames the copy into <library>/.bindery-trash/<job id>/.
	ActionTrash DeleteAction = "trash"
	// ActionUnlink removes it; only on a library with allow_unlink.
	ActionUnlink DeleteAction = "unlink"
	// ActionRestore moves back what a delete job trashed.
	ActionRestore DeleteAction = "restore"
	// ActionPurge removes for good what a delete job trashed, once it is
	// older than trash.retention_days.
	ActionPurge DeleteAction = "purge"
)

var DeleteActions = []DeleteAction{ActionTrash, ActionUnlink, ActionRestore, ActionPurge}

func ParseDeleteAction(s string) (DeleteAction, error) {
	return parseEnum("delete action", s, DeleteActions)
}

// DeleteOutcome is delete_outcomes.outcome (Bindery): what a delete job
// did with one planned copy. Only trashed and unlinked removed anything.
type DeleteOutcome string

const (
	OutcomeTrashed  DeleteOutcome = "trashed"
	OutcomeUnlinked DeleteOutcome = "unlinked"
	// OutcomeRestored: a trashed copy is back at its path.
	OutcomeRestored DeleteOutcome = "restored"
	// OutcomeRestoreConflict: its path is taken; the trash copy stays.
	OutcomeRestoreConflict DeleteOutcome = "restore_conflict"
	// OutcomePurged: the trash copy was removed for good.
	OutcomePurged DeleteOutcome = "purged"
	// OutcomeChanged: the copy's size, mtime or content is not the plan's.
	OutcomeChanged DeleteOutcome = "changed_since_plan"
	// OutcomeMissing: the copy is gone from its path.
	OutcomeMissing DeleteOutcome = "missing"
	// OutcomePathViolation: the path leaves the library (symlink, ..).
	OutcomePathViolation DeleteOutcome = "path_violation"
	// OutcomeLastCopy: the group's keeper is not on disk as planned, so
	// this copy may be the last one: it stays.
	OutcomeLastCopy DeleteOutcome = "last_copy"
	// OutcomeReadOnly: the library is mounted read-only; the job stops.
	OutcomeReadOnly DeleteOutcome = "read_only_filesystem"
	OutcomeIOError  DeleteOutcome = "io_error"
)

var DeleteOutcomes = []DeleteOutcome{OutcomeTrashed, OutcomeUnlinked, OutcomeRestored, OutcomeRestoreConflict, OutcomePurged, OutcomeChanged, OutcomeMissing,
	OutcomePathViolation, OutcomeLastCopy, OutcomeReadOnly, OutcomeIOError}

// Removed reports whether the copy left its path.
func (o DeleteOutcome) Removed() bool { return o == OutcomeTrashed || o == OutcomeUnlinked }

// TrashDir is the folder, at the root of each library, that holds what
// delete jobs trashed: <library>/.bindery-trash/<job id>/<relative path>.
// The scanner never walks it (dot-folders are skipped).
const TrashDir = ".bindery-trash"

// DeletePayload is the payload of a delete job: the plan it carries out.
// The plan's job_id must name the job, or the job is refused: only
// controld authorizes a plan, by writing that column.
type DeletePayload struct {
	PlanID int64 `json:"plan_id"`
}
