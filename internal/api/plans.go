package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// planBody is POST /duplicates/plans: which groups (group_keys, or all
// with optional filters), how to pick the keeper of each, and what to do
// with the other copies.
type planBody struct {
	GroupKeys        []string           `json:"group_keys"`
	All              bool               `json:"all"`
	LibraryID        int64              `json:"library_id"`
	MinSizeBytes     int64              `json:"min_size_bytes"`
	Policy           string             `json:"policy"`
	PreferLibraryID  int64              `json:"prefer_library_id"`
	PreferPathPrefix string             `json:"prefer_path_prefix"`
	Keep             map[string]int64   `json:"keep"`
	Remove           map[string][]int64 `json:"remove"`
	Action           string             `json:"action"`
}

// createPlan makes a dry-run plan: nothing on disk is touched.
func (s *Server) createPlan(c echo.Context) error {
	var b planBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	sel, pol, action, err := b.parse()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	groups, err := s.st.PlanGroups(ctx, sel)
	if err != nil {
		return err
	}
	planned, err := dedup.Decide(groups, pol)
	if err != nil {
		return err
	}
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	request, _ := json.Marshal(b)
	plan, err := s.st.CreatePlan(ctx, store.NewPlan{Policy: pol.Name, Action: action, Request: string(request),
		Groups: planned, TTL: time.Duration(vals.Int(settings.DeletePlanTTLHours)) * time.Hour})
	if err != nil {
		return err
	}
	return s.planJSON(c, http.StatusCreated, plan)
}

// parse checks the body's bad forms before any row is read.
func (b planBody) parse() (store.PlanSelection, dedup.Policy, protocol.DeleteAction, error) {
	var sel store.PlanSelection
	var pol dedup.Policy
	switch {
	case b.All == (len(b.GroupKeys) > 0):
		return sel, pol, "", fieldf("group_keys", "want a list of group keys, or all: true")
	case len(b.GroupKeys) > store.MaxPlanGroups:
		return sel, pol, "", apiErr(protocol.CodePlanTooLarge, "more than %d group keys", store.MaxPlanGroups)
	case !b.All && (b.LibraryID != 0 || b.MinSizeBytes != 0):
		return sel, pol, "", fieldf("library_id", "library_id and min_size_bytes filter all: true")
	case b.LibraryID < 0 || b.MinSizeBytes < 0:
		return sel, pol, "", fieldf("min_size_bytes", "want a non-negative number")
	}
	seen := map[string]bool{}
	for _, k := range b.GroupKeys {
		key, err := protocol.ParseGroupKey(k)
		if err != nil {
			return sel, pol, "", apiErr(protocol.CodeInvalidGroupKey, "%v", err)
		}
		if !seen[k] {
			seen[k] = true
			sel.Keys = append(sel.Keys, key)
		}
	}
	sel.LibraryID, sel.MinSizeBytes = b.LibraryID, b.MinSizeBytes
	pol, err := b.policy()
	if err != nil {
		return sel, pol, "", err
	}
	pol.RemoveIn = b.LibraryID
	action := protocol.ActionTrash
	if b.Action != "" {
		if action, err = protocol.ParseDeleteAction(b.Action); err != nil || (action != protocol.ActionTrash && action != protocol.ActionUnlink) {
			return sel, pol, "", fieldf("action", "want trash or unlink")
		}
	}
	return sel, pol, action, nil
}

func (b planBody) policy() (dedup.Policy, error) {
	name, err := protocol.ParseKeepPolicy(b.Policy)
	if err != nil {
		return dedup.Policy{}, fieldf("policy", "want one of %v", protocol.KeepPolicies)
	}
	pol := dedup.Policy{Name: name, LibraryID: b.PreferLibraryID, PathPrefix: b.PreferPathPrefix, Keep: b.Keep, Remove: b.Remove}
	switch {
	case name == protocol.KeepPreferLibrary && b.PreferLibraryID <= 0:
		return pol, fieldf("prefer_library_id", "prefer_library needs a library id")
	case name != protocol.KeepPreferLibrary && b.PreferLibraryID != 0:
		return pol, fieldf("prefer_library_id", "only with policy prefer_library")
	case name == protocol.KeepPreferPathPrefix && !cleanPrefix(b.PreferPathPrefix):
		return pol, fieldf("prefer_path_prefix", "want a folder relative to its library, without .. or a leading /")
	case name != protocol.KeepPreferPathPrefix && b.PreferPathPrefix != "":
		return pol, fieldf("prefer_path_prefix", "only with policy prefer_path_prefix")
	case name == protocol.KeepExplicit && len(b.Keep) == 0:
		return pol, fieldf("keep", "explicit needs a keeper for each group")
	case name != protocol.KeepExplicit && (len(b.Keep) > 0 || len(b.Remove) > 0):
		return pol, fieldf("keep", "keep and remove are only for policy explicit")
	}
	keys := slices.AppendSeq(slices.Collect(maps.Keys(b.Keep)), maps.Keys(b.Remove))
	for _, k := range keys {
		if _, err := protocol.ParseGroupKey(k); err != nil {
			return pol, apiErr(protocol.CodeInvalidGroupKey, "%v", err)
		}
	}
	return pol, nil
}

// cleanPrefix accepts "Comics/Marvel" or "Comics/Marvel/": relative, clean,
// no NUL.
func cleanPrefix(p string) bool {
	t := strings.TrimSuffix(p, "/")
	return t != "" && !strings.ContainsRune(t, 0) && !strings.HasPrefix(t, "/") && path.Clean(t) == t &&
		t != ".." && !strings.HasPrefix(t, "../")
}

func (s *Server) listPlans(c echo.Context) error {
	limit, after, err := idPage(c)
	if err != nil {
		return err
	}
	plans, err := s.st.ListPlans(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return idPageJSON(c, plans, limit, planSummary, func(p store.Plan) int64 { return p.ID })
}

func (s *Server) getPlan(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	plan, err := s.st.GetPlan(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.planJSON(c, http.StatusOK, plan)
}

// executePlan authorizes the plan's delete job: 202 with the new job, or
// 200 with the job an earlier execute created.
func (s *Server) executePlan(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := emptyBody(c); err != nil {
		return err
	}
	job, created, err := s.st.AuthorizePlan(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if created {
		return c.JSON(http.StatusAccepted, jobView(job))
	}
	return c.JSON(http.StatusOK, jobView(job))
}

// planJSON renders a plan with its groups and, once its job ran, what
// became of each copy.
func (s *Server) planJSON(c echo.Context, status int, plan store.Plan) error {
	ctx := c.Request().Context()
	files, err := s.st.PlanFiles(ctx, plan.ID)
	if err != nil {
		return err
	}
	var results []store.DeleteResult
	var fates map[int64]protocol.DeleteOutcome
	if plan.JobID.Valid {
		if results, err = s.st.DeleteResults(ctx, plan.JobID.Int64); err != nil {
			return err
		}
		if fates, err = s.st.TrashFates(ctx, plan.JobID.Int64); err != nil {
			return err
		}
	}
	return c.JSON(status, planView(plan, files, results, fates))
}

// restoreBody is POST /trash/{job_id}/restore: the files to move back, or
// all that the job trashed.
type restoreBody struct {
	FileIDs []int64 `json:"file_ids"`
}

// restoreTrash authorizes a job that moves back what a delete job trashed.
func (s *Server) restoreTrash(c echo.Context) error {
	id, err := pathID(c, "job_id")
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var b restoreBody
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := decodeBody(body, &b); err != nil {
			return err
		}
	}
	for _, f := range b.FileIDs {
		if f <= 0 {
			return fieldf("file_ids", "want file ids")
		}
	}
	job, err := s.st.CreateRestore(c.Request().Context(), id, b.FileIDs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, jobView(job))
}
