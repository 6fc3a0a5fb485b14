package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// listDuplicateGroups pages duplicate groups in protocol §6.2 order; the
// cursor is base64url JSON of the last group's four ordering fields.
func (s *Server) listDuplicateGroups(c echo.Context) error {
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	var after *protocol.DuplicateGroupCursor
	if cur := c.QueryParam("cursor"); cur != "" {
		dc, err := protocol.DecodeDuplicateGroupCursor(cur)
		if err != nil {
			return invalidCursor()
		}
		after = &dc
	}
	groups, err := s.st.DuplicateGroups(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, makePage(groups, limit, func(g store.DuplicateGroup) store.DuplicateGroup { return g },
		func(g store.DuplicateGroup) string { return protocol.EncodeCursor(g.Cursor()) }))
}

// listDuplicateFiles pages the files of one group in id order (§6.3).
func (s *Server) listDuplicateFiles(c echo.Context) error {
	key, err := protocol.ParseGroupKey(c.Param("key"))
	if err != nil {
		return badRequest(CodeInvalidGroupKey, "%v", err).with("parameter", "group_key")
	}
	limit, after, err := idPage(c)
	if err != nil {
		return err
	}
	files, err := s.st.DuplicateGroupFiles(c.Request().Context(), key, after, limit+1)
	if err != nil {
		return err
	}
	return idPageJSON(c, files, limit, func(f store.DuplicateFile) store.DuplicateFile { return f },
		func(f store.DuplicateFile) int64 { return f.ID })
}
