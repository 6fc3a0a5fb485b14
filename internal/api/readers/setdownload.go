package readers

import (
	"fmt"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/reader"
	"github.com/bindery-nas/bindery/internal/settings"
)

// cbzType is the media type of a cbz, which is what a multi-volume RAR
// book downloads as.
const cbzType = "application/vnd.comicbook+zip"

// isVolumeSet: the scan recorded the book as a multi-volume RAR set
// (library_files.volumes ≥ 2).
func isVolumeSet(f model.File) bool { return f.Volumes != nil && model.Deref(f.Volumes) >= 2 }

// downloadSet streams a multi-volume RAR book as one cbz (reader.CBZ):
// every page in page order, then ComicInfo.xml, stored, its length known
// before it is sent. The ETag is the set's version (every volume's size
// and mtime), so If-None-Match is answered without opening the archive.
// Range is not served (Accept-Ranges: none): a client asking for part
// gets the whole, as RFC 9110 allows.
func (s *Server) downloadSet(c echo.Context, f model.File, loc reader.Located, vals settings.Values) error {
	ver, err := reader.VersionOfSet(loc.Path)
	if err != nil {
		return mediaErr(err)
	}
	etag := fmt.Sprintf(`"z%d-%s"`, f.ID, ver)
	h := c.Response().Header()
	h.Set("ETag", etag)
	h.Set("Last-Modified", ver.Newest.UTC().Format(http.TimeFormat))
	h.Set("Cache-Control", "private, no-cache")
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	b, err := s.books.OpenLocated(c.Request().Context(), loc)
	if err != nil {
		return mediaErr(err)
	}
	defer s.books.Release(b)
	z, err := b.CBZ(maxPageBytes(vals))
	if err != nil {
		return mediaErr(err)
	}
	h.Set(echo.HeaderContentType, cbzType)
	h.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": setFileName(f.RelativePath)}))
	h.Set(echo.HeaderContentLength, strconv.FormatInt(z.Size, 10))
	h.Set("Accept-Ranges", "none")
	h.Set("X-Content-Type-Options", "nosniff")
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(
		time.Now().Add(time.Minute + time.Duration(z.Size/minDownloadRate)*time.Second))
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	if n, err := z.WriteTo(c.Response()); err != nil {
		// The length is promised: the response ends short, and the
		// server closes the connection, which the client sees as failed.
		s.log.Error("volume set download ended short", "file_id", f.ID, "sent", n, "of", z.Size, "err", err)
	}
	return nil
}

// setFileName is the cbz's name: the first volume's without its volume
// suffix and extension ("Saga v01.part1.rar" is "Saga v01.cbz").
func setFileName(rel string) string {
	base := path.Base(rel)
	base = strings.TrimSuffix(base, path.Ext(base))
	return layout.StripVolume(base) + ".cbz"
}
