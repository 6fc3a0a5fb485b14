package api

import (
	"context"
	"database/sql"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/store"
)

func (s *Server) listSeries(c echo.Context) error {
	return listByLibrary(c, s.st.ListSeries, seriesView, func(r store.Series) int64 { return r.ID })
}

func (s *Server) getSeries(c echo.Context) error {
	return getByID(c, s.st.GetSeries, seriesView)
}

func (s *Server) listSeriesFiles(c echo.Context) error {
	return listUnder(c, s.st.GetSeries, func(ctx context.Context, id, after int64, limit int) ([]store.FileRecord, error) {
		return s.st.ListFiles(ctx, store.FileFilter{SeriesID: sql.NullInt64{Int64: id, Valid: true}}, after, limit)
	}, s.fileView, fileID)
}

// listScans pages scan sessions newest first; the cursor is the last id.
func (s *Server) listScans(c echo.Context) error {
	return listByLibrary(c, s.st.ListScans, scanView, func(r store.ScanRecord) int64 { return r.ID })
}

func (s *Server) getScan(c echo.Context) error {
	return getByID(c, s.st.GetScan, scanView)
}

func (s *Server) listScanErrors(c echo.Context) error {
	return listUnder(c, s.st.GetScan, s.st.ScanErrors, scanErrorView, func(r store.ScanErrorRecord) int64 { return r.ID })
}
