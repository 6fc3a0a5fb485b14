package readers

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
	"github.com/labstack/echo/v4"
)

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
