package httpx

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Shared handler shapes: most read routes are "one row by its path id" or
// "a page of rows keyed by id", and differ only in the store call and the
// view.

// GetByID serves the row whose id is the path's :id through view; the
// store's ErrNotFound becomes the row's 404.
func GetByID[R, T any](c echo.Context, get func(context.Context, int64) (R, error), view func(R) T) error {
	id, err := PathID(c, "id")
	if err != nil {
		return err
	}
	r, err := get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, view(r))
}

// IDPageJSON renders rows fetched with limit+1 as a page whose cursor is
// the id of its last row.
func IDPageJSON[R, T any](c echo.Context, rows []R, limit int, view func(R) T, id func(R) int64) error {
	return c.JSON(http.StatusOK, MakePage(rows, limit, view, func(r R) string {
		return EncodeIDCursor(id(r))
	}))
}

// ListUnder serves a page of the rows under the parent named by the path's
// :id (a scan's errors, a series' files): the parent is looked up first so
// that an unknown parent is its 404 and not an empty page.
func ListUnder[P, R, T any](c echo.Context, parent func(context.Context, int64) (P, error),
	list func(ctx context.Context, parentID, afterID int64, limit int) ([]R, error),
	view func(R) T, id func(R) int64) error {
	pid, err := PathID(c, "id")
	if err != nil {
		return err
	}
	limit, after, err := IDPage(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := parent(ctx, pid); err != nil {
		return err
	}
	rows, err := list(ctx, pid, after, limit+1)
	if err != nil {
		return err
	}
	return IDPageJSON(c, rows, limit, view, id)
}

// ListByLibrary serves a page of rows keyed by id, of the library named by
// ?library_id= or of all libraries without it.
func ListByLibrary[R, T any](c echo.Context, list func(ctx context.Context, libraryID *int64, cursorID int64, limit int) ([]R, error),
	view func(R) T, id func(R) int64) error {
	limit, cursor, err := IDPage(c)
	if err != nil {
		return err
	}
	lib, err := QueryID(c, "library_id")
	if err != nil {
		return err
	}
	rows, err := list(c.Request().Context(), lib, cursor, limit+1)
	if err != nil {
		return err
	}
	return IDPageJSON(c, rows, limit, view, id)
}
