package readers

import (
	"fmt"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/thumbs"
	"github.com/bindery-nas/bindery/protocol"
)

// minDownloadRate is the slowest client a download waits for: the
// server's write timeout is lifted to what the file takes at this rate.
const minDownloadRate = 64 << 10 // bytes per second

// downloadFile streams the file itself (Range, ETag, If-None-Match) with
// its real media type. A folder book is no one file: not_downloadable. A
// multi-volume RAR book is several: it downloads as one cbz (downloadSet).
func (s *Server) downloadFile(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	f, err := s.cat.GetFile(ctx, id)
	if err != nil {
		return err
	}
	if model.Deref(f.Format) == string(protocol.FormatFolder) || strings.HasSuffix(f.RelativePath, "/") {
		return httpx.Err(protocol.CodeNotDownloadable, "file %d is a folder book; download its pages", id)
	}
	src, err := s.th.CoverSource(ctx, id)
	if err != nil {
		return err
	}
	loc, err := s.books.Locate(src)
	if err != nil {
		return mediaErr(err)
	}
	if isVolumeSet(f) {
		vals, err := settings.Load(ctx, s.st)
		if err != nil {
			return err
		}
		return s.downloadSet(c, f, loc, vals)
	}
	file, err := os.Open(loc.Path)
	if err != nil {
		return mediaErr(thumbs.SourceError(err))
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return httpx.Err(protocol.CodeNotDownloadable, "file %d is not a regular file", id)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, downloadType(protocol.FileFormat(model.Deref(f.Format)), file, loc.Path))
	h.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(f.RelativePath)}))
	h.Set("ETag", fmt.Sprintf(`"f%d-%x-%x"`, id, st.Size(), st.ModTime().UnixNano()))
	h.Set("Cache-Control", "private, no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(
		time.Now().Add(time.Minute + time.Duration(st.Size()/minDownloadRate)*time.Second))
	http.ServeContent(c.Response(), c.Request(), "", st.ModTime(), file)
	return nil
}

// downloadType is the media type reader apps know comic archives by
// (application/vnd.comicbook+zip, application/vnd.comicbook-rar,
// application/x-cb7), an image's by its magic, a video's by its name.
func downloadType(format protocol.FileFormat, file *os.File, name string) string {
	switch format {
	case protocol.FormatZip:
		return "application/vnd.comicbook+zip"
	case protocol.FormatRar:
		return "application/vnd.comicbook-rar"
	case protocol.FormatSevenZip:
		return "application/x-cb7"
	case protocol.FormatImage:
		head := make([]byte, 16)
		n, _ := file.ReadAt(head, 0)
		return archive.ImageMediaType(head[:n])
	}
	if t := mime.TypeByExtension(strings.ToLower(path.Ext(name))); t != "" {
		return t
	}
	return "application/octet-stream"
}
