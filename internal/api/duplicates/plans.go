package duplicates

import (
	"encoding/json"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/settings"
	dupstore "github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/protocol"
)

// planBody is POST /duplicates/plans: which groups (group_keys, or all
// with optional filters), how to pick the keeper of each, and what to do
// with the other copies. kind same_pages selects same-book groups of
// GET /duplicates/books instead of byte-identical ones.
type planBody struct {
	Kind             string             `json:"kind"`
	GroupKeys        []string           `json:"group_keys"`
	All              bool               `json:"all"`
	LibraryID        int64              `json:"library_id"`
	MinSizeBytes     int64              `json:"min_size_bytes"`
	Policy           string             `json:"policy"`
	PreferLibraryID  int64              `json:"prefer_library_id"`
	PreferPathPrefix string             `json:"prefer_path_prefix"`
	PreferFormats    []string           `json:"prefer_formats"`
	Keep             map[string]int64   `json:"keep"`
	Remove           map[string][]int64 `json:"remove"`
	Action           string             `json:"action"`
}

// createPlan makes a dry-run plan: nothing on disk is touched.
func (s *Server) createPlan(c echo.Context) error {
	var b planBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	sel, pol, action, err := b.parse()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	sel.Rules = dupstore.SameBookRules{Contains: int(vals.Int(settings.SameBookContainsPages)),
		CommonMinSeries: int(vals.Int(settings.SameBookCommonPagesMinSeries))}
	groups, err := s.dp.PlanGroups(ctx, sel)
	if err != nil {
		return err
	}
	planned, err := dedup.Decide(groups, pol)
	if err != nil {
		return err
	}
	request, _ := json.Marshal(b)
	plan, err := s.dp.CreatePlan(ctx, dupstore.NewPlan{Policy: pol.Name, Action: action, Kind: sel.Kind, Request: string(request),
		Groups: planned, TTL: time.Duration(vals.Int(settings.DeletePlanTTLHours)) * time.Hour})
	if err != nil {
		return err
	}
	return s.planJSON(c, http.StatusCreated, plan)
}

// parse checks the body's bad forms before any row is read.
func (b planBody) parse() (dupstore.PlanSelection, dedup.Policy, protocol.DeleteAction, error) {
	var sel dupstore.PlanSelection
	var pol dedup.Policy
	kind, err := b.kind()
	if err != nil {
		return sel, pol, "", err
	}
	sel.Kind = kind
	switch {
	case b.All == (len(b.GroupKeys) > 0):
		return sel, pol, "", httpx.Fieldf("group_keys", "want a list of group keys, or all: true")
	case len(b.GroupKeys) > dupstore.MaxPlanGroups:
		return sel, pol, "", httpx.Err(protocol.CodePlanTooLarge, "more than %d group keys", dupstore.MaxPlanGroups)
	case !b.All && (b.LibraryID != 0 || b.MinSizeBytes != 0):
		return sel, pol, "", httpx.Fieldf("library_id", "library_id and min_size_bytes filter all: true")
	case b.LibraryID < 0 || b.MinSizeBytes < 0:
		return sel, pol, "", httpx.Fieldf("min_size_bytes", "want a non-negative number")
	case kind == protocol.PlanSamePages && b.MinSizeBytes != 0:
		return sel, pol, "", httpx.Fieldf("min_size_bytes", "min_size_bytes filters byte groups only")
	}
	seen := map[string]bool{}
	for _, k := range b.GroupKeys {
		if err := checkGroupKey(kind, k); err != nil {
			return sel, pol, "", err
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		if kind == protocol.PlanSamePages {
			key, _ := dupstore.ParseSameKey(k)
			sel.SameKeys = append(sel.SameKeys, key)
		} else {
			key, _ := protocol.ParseGroupKey(k)
			sel.Keys = append(sel.Keys, key)
		}
	}
	sel.LibraryID, sel.MinSizeBytes = b.LibraryID, b.MinSizeBytes
	pol, err = b.policy(kind)
	if err != nil {
		return sel, pol, "", err
	}
	pol.RemoveIn = b.LibraryID
	action := protocol.ActionTrash
	if b.Action != "" {
		if action, err = protocol.ParseDeleteAction(b.Action); err != nil || (action != protocol.ActionTrash && action != protocol.ActionUnlink) {
			return sel, pol, "", httpx.Fieldf("action", "want trash or unlink")
		}
	}
	return sel, pol, action, nil
}

// kind is the kind of groups the plan resolves: byte groups (the
// default), or same_pages groups; the other kinds of /duplicates/books
// are a report only.
func (b planBody) kind() (protocol.PlanKind, error) {
	switch b.Kind {
	case "", string(protocol.PlanBytes):
		return protocol.PlanBytes, nil
	case string(protocol.PlanSamePages):
		return protocol.PlanSamePages, nil
	case string(dupstore.KindContains), string(dupstore.KindSamePagesByIndex):
		return "", httpx.Err(protocol.CodeGroupReportOnly, "%s groups are a report only: a plan resolves same_pages groups "+
			"(equal ordered page digests) and byte-identical groups; move or remove such a book yourself", b.Kind)
	}
	return "", httpx.Fieldf("kind", "want bytes or same_pages")
}

// checkGroupKey checks a group key of a kind's form: algorithm:hex for
// byte groups, 64 hex characters for same_pages groups.
func checkGroupKey(kind protocol.PlanKind, k string) error {
	var err error
	if kind == protocol.PlanSamePages {
		_, err = dupstore.ParseSameKey(k)
	} else {
		_, err = protocol.ParseGroupKey(k)
	}
	if err != nil {
		return httpx.Err(protocol.CodeInvalidGroupKey, "%v", err)
	}
	return nil
}

// formatAliases are the book extensions prefer_formats also accepts for
// their containers.
var formatAliases = map[string]protocol.FileFormat{"cbz": protocol.FormatZip, "cb7": protocol.FormatSevenZip, "cbr": protocol.FormatRar}

// preferFormats reads prefer_formats: containers (library_files.format,
// or cbz, cb7, cbr), each once, most wanted first.
func preferFormats(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, f := range in {
		format, ok := formatAliases[f]
		if !ok {
			var err error
			if format, err = protocol.ParseFileFormat(f); err != nil {
				return nil, httpx.Fieldf("prefer_formats", "%q is not a format: want %v, or cbz, cb7, cbr", f, protocol.FileFormats)
			}
		}
		if slices.Contains(out, string(format)) {
			return nil, httpx.Fieldf("prefer_formats", "%q is listed twice", format)
		}
		out = append(out, string(format))
	}
	return out, nil
}

func (b planBody) policy(kind protocol.PlanKind) (dedup.Policy, error) {
	name, err := protocol.ParseKeepPolicy(b.Policy)
	if err != nil {
		return dedup.Policy{}, httpx.Fieldf("policy", "want one of %v", protocol.KeepPolicies)
	}
	pol := dedup.Policy{Name: name, LibraryID: b.PreferLibraryID, PathPrefix: b.PreferPathPrefix, Keep: b.Keep, Remove: b.Remove}
	switch {
	case name == protocol.KeepPreferLibrary && b.PreferLibraryID <= 0:
		return pol, httpx.Fieldf("prefer_library_id", "prefer_library needs a library id")
	case name != protocol.KeepPreferLibrary && b.PreferLibraryID != 0:
		return pol, httpx.Fieldf("prefer_library_id", "only with policy prefer_library")
	case name == protocol.KeepPreferPathPrefix && !cleanPrefix(b.PreferPathPrefix):
		return pol, httpx.Fieldf("prefer_path_prefix", "want a folder relative to its library, without .. or a leading /")
	case name != protocol.KeepPreferPathPrefix && b.PreferPathPrefix != "":
		return pol, httpx.Fieldf("prefer_path_prefix", "only with policy prefer_path_prefix")
	case name == protocol.KeepExplicit && len(b.Keep) == 0:
		return pol, httpx.Fieldf("keep", "explicit needs a keeper for each group")
	case name != protocol.KeepExplicit && (len(b.Keep) > 0 || len(b.Remove) > 0):
		return pol, httpx.Fieldf("keep", "keep and remove are only for policy explicit")
	case name == protocol.KeepPreferFormat && len(b.PreferFormats) == 0:
		return pol, httpx.Fieldf("prefer_formats", "prefer_format needs an order of formats, e.g. [\"cbz\", \"cb7\", \"cbr\"]")
	case name != protocol.KeepPreferFormat && len(b.PreferFormats) > 0:
		return pol, httpx.Fieldf("prefer_formats", "only with policy prefer_format")
	}
	keys := slices.AppendSeq(slices.Collect(maps.Keys(b.Keep)), maps.Keys(b.Remove))
	for _, k := range keys {
		if err := checkGroupKey(kind, k); err != nil {
			return pol, err
		}
	}
	formats, err := preferFormats(b.PreferFormats)
	pol.Formats = formats
	return pol, err
}

// cleanPrefix accepts "Comics/Marvel" or "Comics/Marvel/": relative, clean,
// no NUL.
func cleanPrefix(p string) bool {
	t := strings.TrimSuffix(p, "/")
	return t != "" && !strings.ContainsRune(t, 0) && !strings.HasPrefix(t, "/") && path.Clean(t) == t &&
		t != ".." && !strings.HasPrefix(t, "../")
}

func (s *Server) listPlans(c echo.Context) error {
	limit, after, err := httpx.IDPage(c)
	if err != nil {
		return err
	}
	plans, err := s.dp.ListPlans(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return httpx.IDPageJSON(c, plans, limit, views.PlanSummary, func(p model.Plan) int64 { return p.ID })
}

func (s *Server) getPlan(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	plan, err := s.dp.GetPlan(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.planJSON(c, http.StatusOK, plan)
}

// executePlan authorizes the plan's delete job: 202 with the new job, or
// 200 with the job an earlier execute created.
func (s *Server) executePlan(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := httpx.EmptyBody(c); err != nil {
		return err
	}
	job, created, err := s.dp.AuthorizePlan(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if created {
		return c.JSON(http.StatusAccepted, views.Job(job))
	}
	return c.JSON(http.StatusOK, views.Job(job))
}

// planJSON renders a plan with its groups and, once its job ran, what
// became of each copy.
func (s *Server) planJSON(c echo.Context, status int, plan model.Plan) error {
	ctx := c.Request().Context()
	files, err := s.dp.PlanFiles(ctx, plan.ID)
	if err != nil {
		return err
	}
	var results []model.DeleteResult
	var fates map[int64]protocol.DeleteOutcome
	if plan.JobID != nil {
		if results, err = s.dp.DeleteResults(ctx, model.Deref(plan.JobID)); err != nil {
			return err
		}
		if fates, err = s.dp.TrashFates(ctx, model.Deref(plan.JobID)); err != nil {
			return err
		}
	}
	return c.JSON(status, views.Plan(plan, files, results, fates))
}

// restoreBody is POST /trash/{job_id}/restore: the files to move back, or
// all that the job trashed.
type restoreBody struct {
	FileIDs []int64 `json:"file_ids"`
}

// restoreTrash authorizes a job that moves back what a delete job trashed.
func (s *Server) restoreTrash(c echo.Context) error {
	id, err := httpx.PathID(c, "job_id")
	if err != nil {
		return err
	}
	body, err := httpx.ReadBody(c)
	if err != nil {
		return err
	}
	var b restoreBody
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := httpx.DecodeBody(body, &b); err != nil {
			return err
		}
	}
	for _, f := range b.FileIDs {
		if f <= 0 {
			return httpx.Fieldf("file_ids", "want file ids")
		}
	}
	job, err := s.dp.CreateRestore(c.Request().Context(), id, b.FileIDs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, views.Job(job))
}
