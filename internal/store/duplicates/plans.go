package duplicates

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// MaxPlanGroups caps the groups of one plan: a plan is read whole by the
// delete job and shown whole by the API. Larger selections are refused
// (plan_too_large) and are narrowed by library or minimum size.
const MaxPlanGroups = 10_000

// maxGroupMembers caps the copies of one group a plan reads.
const maxGroupMembers = 1_000

// PlanMember is one file of a duplicate group as a plan sees it.
type PlanMember struct {
	FileID       int64             `db:"id"`
	LibraryID    int64             `db:"library_id"`
	RelativePath string            `db:"relative_path"`
	SizeBytes    int64             `db:"size_bytes"`
	MtimeNS      int64             `db:"mtime_ns"`
	Role         protocol.FileRole `db:"role"`
	// Volumes counts the volumes of a multi-volume RAR book, 0 otherwise.
	Volumes int64 `db:"volumes"`
	// Format is the file's container (zip, rar, 7z, ...), for
	// prefer_format.
	Format sql.NullString `db:"format"`
	// HashAlgorithm and ContentHash are, in a same_pages group, this
	// book's own current content hash (a byte group's is its key).
	HashAlgorithm protocol.HashAlgorithm `db:"hash_algorithm"`
	ContentHash   []byte                 `db:"content_hash"`
	// Pages is, in a same_pages group, the key of the book's whole ordered
	// list of page digests, common pages included: a copy is planned only
	// when it equals its keeper's.
	Pages string `db:"-"`
}

// PlanGroup is a duplicate group with every present, hashed member: a
// group of byte-identical copies (Key), or a same_pages group of books
// (SameKey, samebook_plans.go).
type PlanGroup struct {
	Key     protocol.GroupKey
	SameKey []byte
	Members []PlanMember
}

// Name is the group's key as the API lists it.
func (g PlanGroup) Name() string { return groupName(g.Key, g.SameKey) }

func groupName(k protocol.GroupKey, same []byte) string {
	if same != nil {
		return hex.EncodeToString(same)
	}
	return k.String()
}

// PlanSelection is the groups a plan covers: the listed keys, or all
// groups with at least one member in LibraryID (0: any) whose files are at
// least MinSizeBytes. Kind same_pages selects same-book groups by
// SameKeys instead, compared by Rules.
type PlanSelection struct {
	Kind         protocol.PlanKind
	Keys         []protocol.GroupKey
	SameKeys     [][]byte
	LibraryID    int64
	MinSizeBytes int64
	Rules        SameBookRules
}

var planRow = sqldb.RowKind{Code: protocol.CodePlanNotFound, Name: "plan"}

const planMembersQuery = `SELECT id, library_id, relative_path, size_bytes, mtime_ns, role, COALESCE(volumes, 0) AS volumes, format
	FROM library_files WHERE hash_algorithm = ? AND content_hash = ? AND ` + groupQualifies + ` ORDER BY id LIMIT ?`

// PlanGroups reads the groups of a selection with their members. A listed
// key that is no longer a group (fewer than two present copies) is
// group_not_found.
func (s *Store) PlanGroups(ctx context.Context, sel PlanSelection) ([]PlanGroup, error) {
	if sel.Kind == protocol.PlanSamePages {
		return s.samePagesPlanGroups(ctx, sel)
	}
	if len(sel.Keys) > 0 {
		out := make([]PlanGroup, 0, len(sel.Keys))
		for _, k := range sel.Keys {
			g, err := s.planGroup(ctx, k)
			if err != nil {
				return nil, err
			}
			if len(g.Members) < 2 {
				return nil, &protocol.Error{Code: protocol.CodeGroupNotFound, Message: "no duplicate group " + k.String(), Err: sqldb.ErrNotFound}
			}
			out = append(out, g)
		}
		return out, nil
	}
	var out []PlanGroup
	var after *model.GroupAnchor
	for {
		page, err := s.DuplicateGroups(ctx, after, 500)
		if err != nil || len(page) == 0 {
			return out, err
		}
		for _, dg := range page {
			k, err := protocol.ParseGroupKey(dg.GroupKey)
			if err != nil {
				return nil, fmt.Errorf("plan groups: %w", err)
			}
			if dg.TotalSizeBytes < sel.MinSizeBytes*dg.FileCount {
				continue
			}
			g, err := s.planGroup(ctx, k)
			if err != nil {
				return nil, err
			}
			if len(g.Members) < 2 || !g.touches(sel.LibraryID) {
				continue
			}
			if len(out) == MaxPlanGroups {
				return nil, &protocol.Error{Code: protocol.CodePlanTooLarge, Err: sqldb.ErrConflict,
					Message: "the selection has more than " + strconv.Itoa(MaxPlanGroups) + " groups: narrow it by library or minimum size"}
			}
			out = append(out, g)
		}
		c := page[len(page)-1].Anchor()
		after = &c
	}
}

func (s *Store) planGroup(ctx context.Context, k protocol.GroupKey) (PlanGroup, error) {
	g := PlanGroup{Key: k}
	if err := s.db.R.SelectContext(ctx, &g.Members, planMembersQuery, string(k.Algorithm), k.Hash, maxGroupMembers); err != nil {
		return g, fmt.Errorf("plan group %s: %w", k, err)
	}
	return g, nil
}

func (g PlanGroup) touches(libraryID int64) bool {
	for _, m := range g.Members {
		if libraryID == 0 || m.LibraryID == libraryID {
			return true
		}
	}
	return false
}

// PlannedGroup is what a plan decided for one group.
type PlannedGroup struct {
	Key     protocol.GroupKey
	SameKey []byte
	Keep    PlanMember
	Remove  []PlanMember
}

// Name is the group's key as the API lists it.
func (g PlannedGroup) Name() string { return groupName(g.Key, g.SameKey) }

// NewPlan is the input of CreatePlan.
type NewPlan struct {
	Policy protocol.KeepPolicy
	Action protocol.DeleteAction
	// Kind is what the groups are: byte-identical copies (the zero value
	// is bytes) or same_pages books.
	Kind protocol.PlanKind
	// Request is the client's request, kept for the record (JSON).
	Request string
	Groups  []PlannedGroup
	TTL     time.Duration
}

const planCols = `id, policy, action, request, group_count, remove_count, bytes_freed, job_id, trash_job_id, created_at,
	expires_at, executed_at, group_kind`

// CreatePlan stores a plan and the identity of every member it names.
func (s *Store) CreatePlan(ctx context.Context, p NewPlan) (model.Plan, error) {
	now := s.db.Now()
	var plan model.Plan
	removes, freed := 0, int64(0)
	for _, g := range p.Groups {
		removes += len(g.Remove)
		for _, m := range g.Remove {
			freed += m.SizeBytes
		}
	}
	kind := cmp.Or(p.Kind, protocol.PlanBytes)
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &plan, `INSERT INTO delete_plans (policy, action, request, group_count, remove_count,
				bytes_freed, created_at, expires_at, group_kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+planCols,
			string(p.Policy), string(p.Action), p.Request, len(p.Groups), removes, freed,
			protocol.FormatTime(now), protocol.FormatTime(now.Add(p.TTL)), string(kind))
		if err != nil {
			return err
		}
		return insertPlanFiles(ctx, tx, plan.ID, p.Groups)
	})
	if err != nil {
		return model.Plan{}, fmt.Errorf("create plan: %w", err)
	}
	return plan, nil
}

func insertPlanFiles(ctx context.Context, tx *sqlx.Tx, planID int64, groups []PlannedGroup) error {
	stmt, err := tx.PrepareContext(ctx, insertPlanFile)
	if err != nil {
		return err
	}
	defer stmt.Close()
	seq := 0
	for gi, g := range groups {
		add := func(m PlanMember, decision protocol.PlanDecision) error {
			// A byte group's members hold its key's hash; a same_pages
			// group's each hold their own, and the group has its key.
			alg, hash, key := g.Key.Algorithm, g.Key.Hash, []byte(nil)
			if g.SameKey != nil {
				alg, hash, key = m.HashAlgorithm, m.ContentHash, g.SameKey
			}
			_, err := stmt.ExecContext(ctx, planID, seq, gi, m.FileID, m.LibraryID, m.RelativePath, decision,
				m.SizeBytes, m.MtimeNS, string(alg), hash, nil, key)
			seq++
			return err
		}
		if err := add(g.Keep, protocol.DecisionKeep); err != nil {
			return err
		}
		for _, m := range g.Remove {
			if err := add(m, protocol.DecisionRemove); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertPlanFile stores one plan member with its library's folder: the
// library's path now, unless ?12 gives the one an earlier plan recorded.
const insertPlanFile = `INSERT INTO delete_plan_files (plan_id, seq, group_seq, file_id, library_id,
		relative_path, decision, size_bytes, mtime_ns, hash_algorithm, content_hash, library_path, group_key)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, COALESCE(?12, (SELECT path FROM libraries WHERE id = ?5)), ?13)`

// GetPlan returns one plan or plan_not_found.
func (s *Store) GetPlan(ctx context.Context, id int64) (model.Plan, error) {
	return sqldb.GetRow[model.Plan](ctx, s.db.R, planRow, `SELECT `+planCols+` FROM delete_plans WHERE id = ?`, id)
}

// ListPlans returns up to limit plans with id > afterID, in id order.
func (s *Store) ListPlans(ctx context.Context, afterID int64, limit int) ([]model.Plan, error) {
	var out []model.Plan
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+planCols+` FROM delete_plans WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	return out, nil
}

// PlanFiles returns every member a plan names, keepers first in each
// group, in execution order.
func (s *Store) PlanFiles(ctx context.Context, planID int64) ([]model.PlanFile, error) {
	var out []model.PlanFile
	err := s.db.R.SelectContext(ctx, &out, `SELECT seq, group_seq, file_id, library_id, relative_path, decision,
		size_bytes, mtime_ns, hash_algorithm, content_hash, library_path, group_key FROM delete_plan_files WHERE plan_id = ? ORDER BY seq`, planID)
	if err != nil {
		return nil, fmt.Errorf("plan files: %w", err)
	}
	return out, nil
}

// AuthorizePlan creates the delete job that carries out a plan, once: a
// plan executed before answers with its job (created false). It refuses an
// expired plan (plan_expired), a copy in a library without allow_delete
// (library_read_only) and unlink where a library lacks allow_unlink
// (unlink_not_allowed).
func (s *Store) AuthorizePlan(ctx context.Context, id int64) (job model.Job, created bool, err error) {
	now := s.db.Now()
	err = s.db.Write(ctx, func(tx *sqlx.Tx) error {
		plan, err := sqldb.GetRow[model.Plan](ctx, tx, planRow, `SELECT `+planCols+` FROM delete_plans WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if plan.JobID != nil {
			job, err = sqldb.GetRow[model.Job](ctx, tx, sqldb.JobRow, `SELECT * FROM jobs WHERE id = ?`, *plan.JobID)
			return err
		}
		if !plan.ExpiresAt.After(now) {
			return &protocol.Error{Code: protocol.CodePlanExpired, Message: "plan " + strconv.FormatInt(id, 10) + " expired at " + plan.ExpiresAt.String(), Err: sqldb.ErrConflict}
		}
		if err := checkPlanBinding(ctx, tx, id); err != nil {
			return err
		}
		if err := checkPlanLibraries(ctx, tx, plan); err != nil {
			return err
		}
		job, err = insertPlanJob(ctx, tx, id, protocol.FormatTime(now))
		if err != nil {
			return err
		}
		created = true
		return claimPlanFiles(ctx, tx, id, job.ID)
	})
	if err != nil {
		return model.Job{}, false, fmt.Errorf("authorize plan: %w", err)
	}
	return job, created, nil
}

// insertPlanJob creates the delete job that carries out plan id and binds
// the plan to it: the binding is the authorization workerd checks.
func insertPlanJob(ctx context.Context, tx *sqlx.Tx, id int64, now string) (model.Job, error) {
	var job model.Job
	payload := `{"plan_id":` + strconv.FormatInt(id, 10) + `}`
	if err := tx.GetContext(ctx, &job, `INSERT INTO jobs (kind, status, priority, payload, created_at, updated_at)
		VALUES ('delete', 'pending', 'normal', ?, ?, ?) RETURNING *`, payload, now, now); err != nil {
		return model.Job{}, err
	}
	_, err := tx.ExecContext(ctx, `UPDATE delete_plans SET job_id = ?, executed_at = ? WHERE id = ?`, job.ID, now, id)
	return job, err
}

// checkPlanLibraries refuses a plan whose copies lie in a library that does
// not allow what the plan would do to them.
func checkPlanLibraries(ctx context.Context, tx *sqlx.Tx, plan model.Plan) error {
	var libs []model.Library
	err := tx.SelectContext(ctx, &libs, `SELECT `+sqldb.LibraryCols+` FROM libraries WHERE id IN
		(SELECT library_id FROM delete_plan_files WHERE plan_id = ? AND decision = 'remove') ORDER BY id`, plan.ID)
	if err != nil {
		return err
	}
	for _, l := range libs {
		switch {
		case !l.AllowDelete:
			return &protocol.Error{Code: protocol.CodeLibraryReadOnly, Err: sqldb.ErrConflict,
				Message: "library " + strconv.FormatInt(l.ID, 10) + " does not allow deletion (PATCH /libraries/{id} allow_delete)"}
		case plan.Action == protocol.ActionUnlink && !l.AllowUnlink:
			return &protocol.Error{Code: protocol.CodeUnlinkForbidden, Err: sqldb.ErrConflict,
				Message: "library " + strconv.FormatInt(l.ID, 10) + " does not allow unlink without the trash (allow_unlink)"}
		}
	}
	return nil
}
