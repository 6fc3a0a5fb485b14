package api

import (
	"database/sql"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

func (s *Server) listSeries(c echo.Context) error {
	limit, after, err := idPage(c)
	if err != nil {
		return err
	}
	lib, ok, err := queryID(c, "library_id")
	if err != nil {
		return err
	}
	var rows []store.Series
	if ok {
		rows, err = s.st.ListSeries(c.Request().Context(), lib, after, limit+1)
	} else {
		rows, err = s.st.ListAllSeries(c.Request().Context(), after, limit+1)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, makePage(rows, limit, seriesView, func(r store.Series) string {
		return protocol.EncodeIDCursor(r.ID)
	}))
}

func (s *Server) getSeries(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	r, err := s.st.GetSeries(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, seriesView(r))
}

func (s *Server) listSeriesFiles(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	limit, after, err := idPage(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.st.GetSeries(ctx, id); err != nil {
		return err
	}
	files, err := s.st.ListFiles(ctx, store.FileFilter{SeriesID: sql.NullInt64{Int64: id, Valid: true}}, after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, makePage(files, limit, fileView, fileCursor))
}

// listScans pages scan sessions newest first; the cursor is the last id.
func (s *Server) listScans(c echo.Context) error {
	limit, before, err := idPage(c)
	if err != nil {
		return err
	}
	lib, ok, err := queryID(c, "library_id")
	if err != nil {
		return err
	}
	rows, err := s.st.ListScans(c.Request().Context(), sql.NullInt64{Int64: lib, Valid: ok}, before, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, makePage(rows, limit, scanView, func(r store.ScanRecord) string {
		return protocol.EncodeIDCursor(r.ID)
	}))
}

func (s *Server) getScan(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	r, err := s.st.GetScan(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, scanView(r))
}

func (s *Server) listScanErrors(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	limit, after, err := idPage(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.st.GetScan(ctx, id); err != nil {
		return err
	}
	rows, err := s.st.ScanErrors(ctx, id, after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, makePage(rows, limit, scanErrorView, func(r store.ScanErrorRecord) string {
		return protocol.EncodeIDCursor(r.ID)
	}))
}
