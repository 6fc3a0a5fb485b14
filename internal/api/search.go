package api

import (
	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// GET /api/v1/search?q= answers the books (kind=books, the default) or the
// series (kind=series) of the caller's grant that hold every word of q, the
// last word as a prefix, from the full-text indexes of migration 26. Pages
// are by id with the usual limit and cursor.
func (s *Server) search(c echo.Context) error {
	q, err := searchQuery(c)
	if err != nil {
		return err
	}
	limit, after, err := idPage(c)
	if err != nil {
		return err
	}
	ctx, r := c.Request().Context(), readerOf(c)
	switch c.QueryParam("kind") {
	case "", "books":
		rows, err := s.st.SearchBooks(ctx, r, q, after, 0, limit+1)
		if err != nil {
			return err
		}
		return idPageJSON(c, rows, limit, viewBook, func(b store.Book) int64 { return b.ID })
	case "series":
		rows, err := s.st.SearchSeries(ctx, r, q, after, 0, limit+1)
		if err != nil {
			return err
		}
		return idPageJSON(c, rows, limit, seriesView, func(s store.Series) int64 { return s.ID })
	}
	return apiErr(protocol.CodeInvalidParameter, "kind must be books or series").with("parameter", "kind")
}

// searchQuery parses ?q= into the words the indexes are asked for; every
// way it can fail is invalid_query, its message saying which.
func searchQuery(c echo.Context) (store.SearchQuery, error) {
	params := c.QueryParams()
	if len(params["q"]) > 1 {
		return store.SearchQuery{}, apiErr(protocol.CodeInvalidQuery, "q is given more than once").with("parameter", "q")
	}
	q, err := store.ParseSearch(params.Get("q"))
	if err != nil {
		return store.SearchQuery{}, apiErr(protocol.CodeInvalidQuery, "%s", err.Error()).with("parameter", "q")
	}
	return q, nil
}
