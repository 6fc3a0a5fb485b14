package readers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/protocol"
)

// GET /api/v1/search?q= answers the books (kind=books, the default) or the
// series (kind=series) of the caller's grant that hold every word of q, the
// last word as a prefix, from the full-text indexes of migration 26. Books
// come ranked (title matches first, then by id; store.SearchBooks) and
// page by a (rank, id) cursor; series, whose one field is the name, by id.
func (s *Server) search(c echo.Context) error {
	q, err := searchQuery(c)
	if err != nil {
		return err
	}
	ctx, r := c.Request().Context(), readerOf(c)
	switch c.QueryParam("kind") {
	case "", "books":
		limit, after, err := searchPage(c)
		if err != nil {
			return err
		}
		rows, err := s.rd.SearchBooks(ctx, r, q, after, 0, limit+1)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, httpx.MakePage(rows, limit, func(h reading.SearchHit) bookView { return viewBook(h.Book) },
			func(h reading.SearchHit) string { return httpx.EncodeCursor(h.Anchor()) }))
	case "series":
		limit, after, err := httpx.IDPage(c)
		if err != nil {
			return err
		}
		rows, err := s.rd.SearchSeries(ctx, r, q, after, 0, limit+1)
		if err != nil {
			return err
		}
		return httpx.IDPageJSON(c, rows, limit, views.Series, func(s model.Series) int64 { return s.ID })
	}
	return httpx.Err(protocol.CodeInvalidParameter, "kind must be books or series").With("parameter", "kind")
}

// searchQuery parses ?q= into the words the indexes are asked for; every
// way it can fail is invalid_query, its message saying which.
func searchQuery(c echo.Context) (reading.SearchQuery, error) {
	params := c.QueryParams()
	if len(params["q"]) > 1 {
		return reading.SearchQuery{}, httpx.Err(protocol.CodeInvalidQuery, "q is given more than once").With("parameter", "q")
	}
	q, err := reading.ParseSearch(params.Get("q"))
	if err != nil {
		return reading.SearchQuery{}, httpx.Err(protocol.CodeInvalidQuery, "%s", err.Error()).With("parameter", "q")
	}
	return q, nil
}

// searchPage reads limit and the ranked cursor of a book search (nil when
// absent). A cursor of the id order books were listed in before ranking is
// refused with its own message: it cannot say where to resume.
func searchPage(c echo.Context) (int, *model.SearchAnchor, error) {
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return 0, nil, err
	}
	cur := c.QueryParam("cursor")
	if cur == "" {
		return limit, nil, nil
	}
	a, err := httpx.DecodeSearchCursor(cur)
	if err == nil {
		return limit, &a, nil
	}
	if _, idErr := httpx.DecodeIDCursor(cur); idErr == nil {
		return 0, nil, httpx.Err(protocol.CodeInvalidCursor, "cursor is from the id order of an older search; books are ranked now, so start again without it").
			With("parameter", "cursor")
	}
	return 0, nil, httpx.InvalidCursor()
}
