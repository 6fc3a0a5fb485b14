package readers

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/protocol"
)

// The caller's own routes: who am I, reading progress, what to read next.

func (s *Server) meRoutes(g *echo.Group) {
	g.GET("", s.getMe)
	g.GET("/progress/:id", s.getProgress)
	g.PUT("/progress/:id", s.putProgress)
	g.DELETE("/progress/:id", s.deleteProgress)
	g.GET("/continue-reading", s.listContinueReading)
	g.GET("/on-deck", s.listOnDeck)
	g.GET("/series/:id/next-unread", s.getNextUnread)
}

// meUser is the caller's user id; user_required for the admin token.
func meUser(c echo.Context) (int64, error) {
	r := readerOf(c)
	if r.UserID == 0 {
		return 0, httpx.Err(protocol.CodeUserRequired, "the admin token has no reading progress; sign in as a user")
	}
	return r.UserID, nil
}

func (s *Server) getMe(c echo.Context) error {
	r := readerOf(c)
	libs, err := s.rd.ReaderLibraries(c.Request().Context(), r)
	if err != nil {
		return err
	}
	ids := make([]int64, len(libs))
	for i, l := range libs {
		ids[i] = l.ID
	}
	out := map[string]any{"admin": r.All, "library_ids": ids}
	if !r.All {
		u, err := s.rd.GetUser(c.Request().Context(), r.UserID)
		if err != nil {
			return err
		}
		out["user"] = views.User(u)
	}
	return c.JSON(http.StatusOK, out)
}

type progressView struct {
	FileID    int64          `json:"file_id"`
	Page      int64          `json:"page"`
	Completed bool           `json:"completed"`
	UpdatedAt *protocol.Time `json:"updated_at"`
}

func (s *Server) getProgress(c echo.Context) error {
	if _, err := meUser(c); err != nil {
		return err
	}
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	b, err := s.mustSeeFile(c, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, progressView{FileID: b.ID, Page: b.Page, Completed: b.Completed, UpdatedAt: b.ReadAt})
}

// putProgress records the page (1 to the book's page count when known)
// and whether the book is finished.
func (s *Server) putProgress(c echo.Context) error {
	uid, err := meUser(c)
	if err != nil {
		return err
	}
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	var body struct {
		Page      *json.Number `json:"page"`
		Completed *bool        `json:"completed"`
	}
	if err := httpx.DecodeJSON(c, &body); err != nil {
		return err
	}
	b, err := s.mustSeeFile(c, id)
	if err != nil {
		return err
	}
	page, err := progressPage(body.Page, b.TotalPages)
	if err != nil {
		return err
	}
	p, err := s.rd.PutProgress(c.Request().Context(), uid, id, page, body.Completed != nil && *body.Completed)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, progressView(p))
}

func progressPage(n *json.Number, total *int64) (int64, error) {
	if n == nil {
		return 0, httpx.Fieldf("page", "required")
	}
	page, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || page < 1 {
		return 0, httpx.Fieldf("page", "must be a positive integer")
	}
	if total != nil && page > model.Deref(total) {
		return 0, httpx.Fieldf("page", "the book has %d pages", model.Deref(total))
	}
	return page, nil
}

func (s *Server) deleteProgress(c echo.Context) error {
	uid, err := meUser(c)
	if err != nil {
		return err
	}
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.rd.DeleteProgress(c.Request().Context(), uid, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// bookView is a file as a reader sees it: with the reader's progress.
type bookView struct {
	ID         int64          `json:"id"`
	LibraryID  int64          `json:"library_id"`
	SeriesID   *int64         `json:"series_id"`
	SeriesName *string        `json:"series_name"`
	Path       string         `json:"relative_path"`
	TotalPages *int64         `json:"total_pages"`
	Page       int64          `json:"page"`
	Completed  bool           `json:"completed"`
	ReadAt     *protocol.Time `json:"read_at"`
}

func viewBook(b model.Book) bookView {
	v := bookView{ID: b.ID, LibraryID: b.LibraryID, Path: b.RelativePath, Page: b.Page, Completed: b.Completed, ReadAt: b.ReadAt}
	if b.SeriesID != nil {
		v.SeriesID, v.SeriesName = b.SeriesID, b.SeriesName
	}
	if b.TotalPages != nil {
		v.TotalPages = b.TotalPages
	}
	return v
}

type bookList func(r reading.Reader, offset, limit int) ([]model.Book, error)

// listBooks serves a reader list as {items: [...]} (up to ?limit=).
func listBooks(c echo.Context, list bookList) error {
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	books, err := list(readerOf(c), 0, limit)
	if err != nil {
		return err
	}
	out := make([]bookView, len(books))
	for i, b := range books {
		out[i] = viewBook(b)
	}
	return c.JSON(http.StatusOK, map[string]any{"items": out})
}

func (s *Server) listContinueReading(c echo.Context) error {
	return listBooks(c, func(r reading.Reader, o, l int) ([]model.Book, error) {
		return s.rd.ContinueReading(c.Request().Context(), r, o, l)
	})
}

func (s *Server) listOnDeck(c echo.Context) error {
	return listBooks(c, func(r reading.Reader, o, l int) ([]model.Book, error) {
		return s.rd.OnDeck(c.Request().Context(), r, o, l)
	})
}

func (s *Server) getNextUnread(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	b, err := s.rd.NextUnread(c.Request().Context(), readerOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, viewBook(b))
}
