package duplicates

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/settings"
	dupstore "github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/protocol"
)

// listDuplicateGroups pages duplicate groups in protocol §6.2 order; the
// cursor is base64url JSON of the last group's four ordering fields.
func (s *Server) listDuplicateGroups(c echo.Context) error {
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	var after *model.GroupAnchor
	if cur := c.QueryParam("cursor"); cur != "" {
		dc, err := httpx.DecodeGroupCursor(cur)
		if err != nil {
			return httpx.InvalidCursor()
		}
		after = &dc
	}
	ctx := c.Request().Context()
	groups, err := s.dp.DuplicateGroups(ctx, after, limit+1)
	if err != nil {
		return err
	}
	// The status costs a pass over the due files, so only the first page
	// carries it: a client paging through thousands of groups pays it once.
	var status *hashStatusView
	if after == nil {
		st, err := s.hashStatus(ctx)
		if err != nil {
			return err
		}
		status = &st
	}
	return c.JSON(http.StatusOK, groupPage{
		Page: httpx.MakePage(groups, limit, views.DuplicateGroup,
			func(g dupstore.DuplicateGroup) string { return httpx.EncodeCursor(g.Anchor()) }),
		Status: status,
	})
}

// groupPage is a page of groups with how far the search for them is.
type groupPage struct {
	httpx.Page[views.DuplicateGroupJSON]
	Status *hashStatusView `json:"status"` // first page only
}

// hashStatusView says whether the duplicate groups are complete: they are
// once no candidate (a due file that shares its size with another present
// file) is left; the backfill of the other files does not change them.
type hashStatusView struct {
	Complete          bool   `json:"complete"`
	HashAlgorithm     string `json:"hash_algorithm"`
	CandidatesPending int64  `json:"candidates_pending"`
	CandidateBytes    int64  `json:"candidate_bytes"`
	BackfillPending   int64  `json:"backfill_pending"`
	BackfillBytes     int64  `json:"backfill_bytes"`
	Unreadable        int64  `json:"unreadable"`
}

func (s *Server) hashStatus(ctx context.Context) (hashStatusView, error) {
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return hashStatusView{}, err
	}
	alg := protocol.HashAlgorithm(vals.Enum(settings.HashAlgorithm))
	h, err := s.hs.HashStatus(ctx, alg)
	if err != nil {
		return hashStatusView{}, err
	}
	return hashStatusView{
		Complete: h.Complete(), HashAlgorithm: string(alg),
		CandidatesPending: h.CandidatesPending, CandidateBytes: h.CandidateBytes,
		BackfillPending: h.BackfillPending, BackfillBytes: h.BackfillBytes, Unreadable: h.Unreadable,
	}, nil
}

// listDuplicateFiles pages the files of one group in id order (§6.3).
func (s *Server) listDuplicateFiles(c echo.Context) error {
	key, err := protocol.ParseGroupKey(c.Param("key"))
	if err != nil {
		return httpx.Err(protocol.CodeInvalidGroupKey, "%v", err).With("parameter", "group_key")
	}
	limit, after, err := httpx.IDPage(c)
	if err != nil {
		return err
	}
	files, err := s.dp.DuplicateGroupFiles(c.Request().Context(), key, after, limit+1)
	if err != nil {
		return err
	}
	return httpx.IDPageJSON(c, files, limit, views.DuplicateFile,
		func(f dupstore.DuplicateFile) int64 { return f.ID })
}
