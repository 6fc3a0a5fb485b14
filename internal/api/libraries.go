package api

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

type createLibraryBody struct {
	Name                *string `json:"name"`
	Path                *string `json:"path"`
	ScanIntervalMinutes *int64  `json:"scan_interval_minutes"`
	Media               *string `json:"media"`
	Watch               *string `json:"watch"`
}

type patchLibraryBody struct {
	Name                *string `json:"name"`
	ScanIntervalMinutes *int64  `json:"scan_interval_minutes"`
	AllowDelete         *bool   `json:"allow_delete"`
	AllowUnlink         *bool   `json:"allow_unlink"`
	Media               *string `json:"media"`
	Watch               *string `json:"watch"`
}

// maxScanInterval is one year: anything larger is a typo.
const maxScanInterval = 525600

func validName(name *string) error {
	if name == nil {
		return nil
	}
	if n := len(strings.TrimSpace(*name)); n == 0 || len(*name) > 200 || strings.ContainsRune(*name, 0) {
		return httpx.Fieldf("name", "want 1 to 200 characters")
	}
	return nil
}

func validInterval(v *int64) error {
	if v != nil && (*v < 0 || *v > maxScanInterval) {
		return httpx.Fieldf("scan_interval_minutes", "want 0 (manual only) to %d", maxScanInterval)
	}
	return nil
}

// validMedia parses the media field: comics, or comics+video.
func validMedia(v *string) (*protocol.LibraryMedia, error) {
	if v == nil {
		return nil, nil
	}
	m, err := protocol.ParseLibraryMedia(*v)
	if err != nil {
		return nil, httpx.Fieldf("media", "want one of %v", protocol.LibraryMedias)
	}
	return &m, nil
}

// validWatch parses the watch field: auto, inotify, poll or off.
func validWatch(v *string) (*protocol.WatchMode, error) {
	if v == nil {
		return nil, nil
	}
	m, err := protocol.ParseWatchMode(*v)
	if err != nil {
		return nil, httpx.Fieldf("watch", "want one of %v", protocol.WatchModes)
	}
	return &m, nil
}

func (s *Server) createLibrary(c echo.Context) error {
	var b createLibraryBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.Name == nil {
		return httpx.Fieldf("name", "required")
	}
	if b.Path == nil {
		return httpx.Fieldf("path", "required")
	}
	media, err := validMedia(b.Media)
	watch, werr := validWatch(b.Watch)
	if err := errors.Join(validName(b.Name), validInterval(b.ScanIntervalMinutes), err, werr); err != nil {
		return firstAPIError(err)
	}
	real, err := s.libraryPath(*b.Path)
	if err != nil {
		return err
	}
	in := store.NewLibrary{Name: strings.TrimSpace(*b.Name), Path: real}
	if b.ScanIntervalMinutes != nil {
		in.ScanIntervalMinutes = *b.ScanIntervalMinutes
	}
	if media != nil {
		in.Media = *media
	}
	if watch != nil {
		in.Watch = *watch
	}
	lib, err := s.st.CreateLibrary(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, views.Library(lib))
}

// firstAPIError unwraps errors.Join to the first *Error.
func firstAPIError(err error) error {
	var ae *httpx.Error
	if errors.As(err, &ae) {
		return ae
	}
	return err
}

// libraryPath validates a requested library path and returns its real
// path. The path must be absolute and lexically under a library root before
// anything is looked up (so the API cannot be used to probe the rest of the
// file system), exist, be a directory, and still lie under a root once
// every symlink is resolved.
func (s *Server) libraryPath(p string) (string, error) {
	outside := func() error {
		return httpx.Err(protocol.CodePathOutsideRoot, "path must lie under a library root").
			With("field", "path").With("library_roots", s.roots)
	}
	if p == "" || strings.ContainsRune(p, 0) || !filepath.IsAbs(p) {
		return "", outside()
	}
	clean := filepath.Clean(p)
	var root string
	for _, r := range s.roots {
		if clean == r || strings.HasPrefix(clean, strings.TrimSuffix(r, "/")+"/") {
			root = r
			break
		}
	}
	if root == "" {
		return "", outside()
	}
	real, err := filepath.EvalSymlinks(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return "", httpx.Err(protocol.CodePathNotFound, "path does not exist").With("field", "path")
	}
	if err != nil {
		return "", httpx.Err(protocol.CodePathNotFound, "path cannot be resolved").With("field", "path")
	}
	if ok, err := s.realRoots.Contains(real); err != nil || !ok {
		return "", outside()
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", httpx.Err(protocol.CodePathNotFound, "path does not exist").With("field", "path")
	}
	if !fi.IsDir() {
		return "", httpx.Err(protocol.CodePathNotDirectory, "path is not a directory").With("field", "path")
	}
	return real, nil
}

func (s *Server) listLibraries(c echo.Context) error {
	limit, after, err := httpx.IDPage(c)
	if err != nil {
		return err
	}
	libs, err := s.st.ListLibraries(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return httpx.IDPageJSON(c, libs, limit, views.Library, func(l model.Library) int64 { return l.ID })
}

func (s *Server) getLibrary(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	lib, err := s.st.GetLibrary(ctx, id)
	if err != nil {
		return err
	}
	st, err := s.st.LibraryStats(ctx, id)
	if err != nil {
		return err
	}
	v := views.Library(lib)
	v.FileCount, v.MissingCount, v.SeriesCount = &st.FileCount, &st.MissingCount, &st.SeriesCount
	if s.cfg.WatchStatus != nil {
		if ws, ok := s.cfg.WatchStatus(id); ok {
			v.Watcher = &ws
		}
	}
	if st.LastScanID != nil {
		scan, err := s.cat.GetScan(ctx, model.Deref(st.LastScanID))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil {
			sv := views.Scan(scan)
			v.LastScan = &sv
		}
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) patchLibrary(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	var b patchLibraryBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	media, err := validMedia(b.Media)
	watch, werr := validWatch(b.Watch)
	if err := errors.Join(validName(b.Name), validInterval(b.ScanIntervalMinutes), err, werr); err != nil {
		return firstAPIError(err)
	}
	if b.Name != nil {
		n := strings.TrimSpace(*b.Name)
		b.Name = &n
	}
	lib, err := s.st.UpdateLibrary(c.Request().Context(), id, store.LibraryPatch{Name: b.Name, ScanIntervalMinutes: b.ScanIntervalMinutes,
		AllowDelete: b.AllowDelete, AllowUnlink: b.AllowUnlink, Media: media, Watch: watch})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views.Library(lib))
}

func (s *Server) deleteLibrary(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.st.DeleteLibrary(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
