package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/protocol"
)

// listSeries pages series by name in natural order (?sort=name, the
// default) or by id (?sort=id).
func (s *Server) listSeries(c echo.Context) error {
	byID, after, err := httpx.NaturalOrder(c, "name")
	if err != nil {
		return err
	}
	if byID {
		return httpx.ListByLibrary(c, s.cat.ListSeries, views.Series, func(r model.Series) int64 { return r.ID })
	}
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	lib, err := httpx.QueryID(c, "library_id")
	if err != nil {
		return err
	}
	rows, err := s.cat.ListSeriesInOrder(c.Request().Context(), lib, after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, httpx.MakePage(rows, limit, views.Series, func(r model.Series) string { return httpx.SortCursor(r.SortKey, r.ID) }))
}

// getSeries returns a series with its details: ComicInfo fields of its
// books and its cover: the series art beside its first book (cover.jpg,
// folder.png … in the book's folder or, for a volume folder, the series
// folder above it), else the cover of its first book that has one.
func (s *Server) getSeries(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ser, err := s.cat.GetSeries(ctx, id)
	if err != nil {
		return err
	}
	d, err := s.cat.GetSeriesDetails(ctx, id)
	if err != nil {
		return err
	}
	v := views.Series(ser)
	v.Details = &views.SeriesDetailsJSON{Summary: d.Summary, Genres: views.SplitList(d.Genre), Tags: views.SplitList(d.Tags),
		AgeRating: d.AgeRating, Language: d.LanguageISO, Writers: views.SplitList(d.Writer),
		Manga: d.Manga, RightToLeft: protocol.Manga(model.Deref(d.Manga)).RightToLeft(), Count: d.SeriesCount,
		Cover: views.CoverJSON{Status: "none"}, CoverFile: d.CoverFileID}
	if v.Summary == nil {
		v.Summary = v.Details.Summary
	}
	if d.FirstBook != nil {
		art, ok, err := s.cat.SeriesArt(ctx, ser.LibraryID, layout.ArtFolders(model.Deref(d.FirstBook)))
		if err != nil {
			return err
		}
		if ok {
			d.CoverFileID = &art
			v.Details.CoverFile = &art
		}
	}
	if d.CoverFileID != nil {
		f, err := s.cat.GetFile(ctx, model.Deref(d.CoverFileID))
		if err != nil {
			return err
		}
		v.Details.Cover = s.fileView(f).Cover
	}
	return c.JSON(http.StatusOK, v)
}

// listSeriesFiles pages the books of a series in reading order
// (?sort=number, the default: ComicInfo Number, Volume, natural file name)
// or by id (?sort=id).
func (s *Server) listSeriesFiles(c echo.Context) error {
	byID, after, err := httpx.NaturalOrder(c, "number")
	if err != nil {
		return err
	}
	if byID {
		return httpx.ListUnder(c, s.cat.GetSeries, func(ctx context.Context, id, after int64, limit int) ([]model.File, error) {
			return s.cat.ListFiles(ctx, catalog.FileFilter{SeriesID: new(int64(id))}, after, limit)
		}, s.fileView, fileID)
	}
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.cat.GetSeries(ctx, id); err != nil {
		return err
	}
	rows, err := s.cat.ListSeriesFilesInOrder(ctx, id, after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, httpx.MakePage(rows, limit, s.fileView, func(r model.File) string { return httpx.SortCursor(r.SortKey, r.ID) }))
}

// listScans pages scan sessions newest first; the cursor is the last id.
func (s *Server) listScans(c echo.Context) error {
	return httpx.ListByLibrary(c, s.cat.ListScans, views.Scan, func(r model.Scan) int64 { return r.ID })
}

func (s *Server) getScan(c echo.Context) error {
	return httpx.GetByID(c, s.cat.GetScan, views.Scan)
}

func (s *Server) listScanErrors(c echo.Context) error {
	return httpx.ListUnder(c, s.cat.GetScan, s.cat.ScanErrors, views.ScanError, func(r model.ScanErrorEntry) int64 { return r.ID })
}
