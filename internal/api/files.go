package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/protocol"
)

func fileID(f model.File) int64 { return f.ID }

// fileView is a file's row as the admin API shows it, its cover URL signed.
func (s *Server) fileView(f model.File) views.FileJSON { return views.File(f, s.readers.CoverURL) }

// listFiles pages files in natural path order (?sort=path, the default:
// library by library, "Batman 2" before "Batman 10") or by id (?sort=id).
func (s *Server) listFiles(c echo.Context) error {
	byID, after, err := httpx.NaturalOrder(c, "path")
	if err != nil {
		return err
	}
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	var f catalog.FileFilter
	if f.LibraryID, err = httpx.QueryID(c, "library_id"); err != nil {
		return err
	}
	if f.SeriesID, err = httpx.QueryID(c, "series_id"); err != nil {
		return err
	}
	if f.Missing, err = httpx.QueryBool(c, "missing"); err != nil {
		return err
	}
	if f.Format, err = httpx.QueryEnum(c, "format", protocol.ParseFileFormat); err != nil {
		return err
	}
	if f.Roles, err = roleFilter(c); err != nil {
		return err
	}
	if byID {
		_, lastID, err := httpx.IDPage(c)
		if err != nil {
			return err
		}
		files, err := s.cat.ListFiles(c.Request().Context(), f, lastID, limit+1)
		if err != nil {
			return err
		}
		return httpx.IDPageJSON(c, files, limit, s.fileView, fileID)
	}
	files, err := s.cat.ListFilesInOrder(c.Request().Context(), f, after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, httpx.MakePage(files, limit, s.fileView, func(r model.File) string {
		return EncodeCursor(model.SortAnchor{Scope: r.LibraryID, Key: r.PathKey, ID: r.ID})
	}))
}

// roleFilter is ?role=: books (archives, loose images, folder books and
// videos) by default; page (the images of folder books), sidecar (series
// art), book or all.
func roleFilter(c echo.Context) ([]protocol.FileRole, error) {
	switch v := c.QueryParam("role"); v {
	case "", "book":
		return []protocol.FileRole{protocol.RoleBook, protocol.RoleFolder}, nil
	case "all":
		return nil, nil
	case string(protocol.RolePage), string(protocol.RoleSidecar):
		return []protocol.FileRole{protocol.FileRole(v)}, nil
	default:
		return nil, httpx.Err(protocol.CodeInvalidParameter, "role must be book, page, sidecar or all, not %q", v).With("parameter", "role")
	}
}

func (s *Server) getFile(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	f, err := s.cat.GetFile(ctx, id)
	if err != nil {
		return err
	}
	m, err := s.cat.FileMetadata(ctx, id)
	if err != nil {
		return err
	}
	v := s.fileView(f)
	if m != nil {
		v.Metadata = views.Metadata(*m)
	}
	if model.Deref(f.Format) == string(protocol.FormatVideo) {
		p, err := s.cat.VideoProbeOf(ctx, id)
		switch {
		case err == nil:
			v.Video = views.Video(p)
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	return c.JSON(http.StatusOK, v)
}

// regenerateCover admits a new render of a file's cover even when one is
// ready: 202 with the new row, 200 with the pending/running row that
// already exists.
func (s *Server) regenerateCover(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := httpx.EmptyBody(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	format := protocol.ImageFormat(vals.Enum(settings.ScanCoverFormat))
	t, created, err := s.th.RegenerateThumbnail(ctx, id, format,
		vals.Int(settings.ThumbnailQueueCapacity), vals.Int(settings.CoverCacheShardCount))
	return s.admitted(c, t, created, err)
}

// admitted renders the outcome of a thumbnail admission.
func (s *Server) admitted(c echo.Context, t model.Thumbnail, created bool, err error) error {
	if errors.Is(err, store.ErrQueueFull) {
		return httpx.Err(protocol.CodeThumbnailQueueFull,
			"the thumbnail queue is full (thumbnail.queue.capacity); retry later")
	}
	if err != nil {
		return err
	}
	if created {
		return c.JSON(http.StatusAccepted, views.Thumbnail(t))
	}
	return c.JSON(http.StatusOK, views.Thumbnail(t))
}
