package api

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

func fileID(f model.File) int64 { return f.ID }

// fileView is a file's row as the admin API shows it, its cover URL signed.
func (s *Server) fileView(f model.File) views.FileJSON { return views.File(f, s.signer.url) }

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

// getCover serves the cached cover of a file. The path comes from the
// newest ready thumbnail row and must resolve under <state>/covers: a row
// pointing anywhere else (written by hand, or a symlink planted in the
// cache) is refused, so this route can never serve a library file or any
// other file. With ?v= equal to the current version the response may be
// cached forever (the URL changes when the cover does); otherwise clients
// must revalidate.
func (s *Server) getCover(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	ref, err := s.cat.CoverOf(c.Request().Context(), id)
	if err != nil {
		return err
	}
	notReady := httpx.Err(protocol.CodeCoverNotReady, "file %d has no cover yet", id)
	if s.cfg.StateDir == "" {
		return notReady
	}
	f, fi, err := s.openCover(ref)
	if errors.Is(err, fs.ErrNotExist) {
		return notReady
	}
	if err != nil {
		s.log.Warn("cover refused", "file_id", id, "thumbnail_id", ref.ThumbnailID, "err", err)
		return notReady
	}
	defer f.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, coverType(ref.Format))
	h.Set("ETag", fmt.Sprintf(`"%s-%d-%x"`, ref.Version, fi.Size(), fi.ModTime().UnixNano()))
	h.Set("X-Content-Type-Options", "nosniff")
	if c.QueryParam("v") == ref.Version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(c.Response(), c.Request(), "", fi.ModTime(), f)
	return nil
}

// openCover opens the cache file of ref after confining it to
// <state>/covers by realpath.
func (s *Server) openCover(ref catalog.CoverRef) (*os.File, os.FileInfo, error) {
	rel, ok := strings.CutPrefix(ref.OutputRelPath, thumbnails.CoversDir+"/")
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q is not under %s/", pathsafe.ErrOutside, ref.OutputRelPath, thumbnails.CoversDir)
	}
	real, err := pathsafe.Resolve(filepath.Join(s.cfg.StateDir, thumbnails.CoversDir), rel)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("cover %s: not a regular file: %w", rel, fs.ErrNotExist)
	}
	return f, fi, nil
}

func coverType(f protocol.ImageFormat) string {
	if f == protocol.ImageJPEG {
		return "image/jpeg"
	}
	return "image/webp"
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
