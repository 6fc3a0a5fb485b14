package readers

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/reader"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/thumbs"
	"github.com/bindery-nas/bindery/protocol"
)

// maxPageWidth bounds ?width= (the decoder's own pixel limit is 16384²).
const maxPageWidth = 16384

// pageRoutes are the reader's routes: the pages of a book and the file
// itself, read-only from the library (docs/PROTOCOL.md §"Who opens media").
// They sit behind readerFile: a reader sees the books of its grant, the
// admin token every book.
func (s *Server) pageRoutes(e *echo.Echo) {
	e.GET(httpx.Base+"/files/:id/pages", s.listPages, s.readerFile)
	e.GET(httpx.Base+"/files/:id/pages/:n", s.getPage, s.readerFile)
	e.GET(httpx.Base+"/files/:id/download", s.downloadFile, s.readerFile)
}

type pageJSON struct {
	Number    int     `json:"number"`
	Name      string  `json:"name"`
	MediaType string  `json:"media_type"`
	Width     *int    `json:"width"`
	Height    *int    `json:"height"`
	Wide      bool    `json:"wide"`
	SizeBytes int64   `json:"size_bytes"`
	ErrorCode *string `json:"error_code"`
}

type pagesJSON struct {
	FileID int64      `json:"file_id"`
	Count  int        `json:"count"`
	Items  []pageJSON `json:"items"`
}

// listPages lists a book's pages in reading order with their sizes.
func (s *Server) listPages(c echo.Context) error {
	b, vals, err := s.openBook(c)
	if err != nil {
		return err
	}
	defer s.books.Release(b)
	pages := b.Pages(maxPageBytes(vals))
	wide := vals.Int(settings.ReaderWideRatioPercent)
	out := pagesJSON{FileID: b.FileID, Count: len(pages), Items: make([]pageJSON, len(pages))}
	for i, p := range pages {
		v := pageJSON{Number: p.Number, Name: p.Name, MediaType: p.MediaType, Wide: p.Wide(wide), SizeBytes: p.Size}
		if p.ErrorCode != "" {
			v.ErrorCode = &p.ErrorCode
		} else {
			v.Width, v.Height = &p.Width, &p.Height
		}
		out.Items[i] = v
	}
	return c.JSON(http.StatusOK, out)
}

// getPage streams page n, or the page shrunk to ?width= (never enlarged).
// The ETag names the book's version, the page and the width, so a reader's
// If-None-Match is answered without opening the archive.
func (s *Server) getPage(c echo.Context) error {
	n, err := pageNumber(c)
	if err != nil {
		return err
	}
	width, err := pageWidth(c)
	if err != nil {
		return err
	}
	loc, vals, err := s.locateBook(c)
	if err != nil {
		return err
	}
	key := reader.Key{FileID: loc.FileID, Version: loc.Version(), Page: n, Width: width}
	etag := pageETag(key)
	h := c.Response().Header()
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		h.Set("ETag", etag)
		h.Set("Last-Modified", loc.Info.ModTime().UTC().Format(http.TimeFormat))
		return c.NoContent(http.StatusNotModified)
	}
	b, err := s.books.OpenLocated(c.Request().Context(), loc)
	if err != nil {
		return mediaErr(err)
	}
	defer s.books.Release(b)
	if n > b.Count() {
		return httpx.Err(protocol.CodePageNotFound, "file %d has %d pages, not %d", b.FileID, b.Count(), n).With("count", b.Count())
	}
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	data, mediaType, err := s.pageBytes(b, key, vals)
	if err != nil {
		return err
	}
	h.Set(echo.HeaderContentType, mediaType)
	http.ServeContent(c.Response(), c.Request(), "", b.ModTime, bytes.NewReader(data))
	return nil
}

// pageBytes reads page key.Page, shrunk when key.Width asks for less than
// the page has.
func (s *Server) pageBytes(b *reader.Book, key reader.Key, vals settings.Values) ([]byte, string, error) {
	if key.Width > 0 && s.cfg.StateDir != "" {
		if data, format, ok := s.shrunk.Get(key); ok {
			return data, coverType(format), nil
		}
	}
	data, _, err := b.Read(key.Page, maxPageBytes(vals))
	if err != nil {
		return nil, "", mediaErr(err)
	}
	if key.Width == 0 {
		return data, archive.ImageMediaType(data[:min(len(data), 16)]), nil
	}
	if w, _, err := thumbs.ImageSize(data); err != nil {
		return nil, "", mediaErr(err)
	} else if w <= key.Width {
		return data, archive.ImageMediaType(data[:min(len(data), 16)]), nil // never enlarged
	}
	budget := vals.Int(settings.ReaderPageCacheMB) << 20
	if s.cfg.StateDir == "" {
		budget = 0
	}
	small, format, err := s.shrunk.Make(key, data, budget)
	if err != nil {
		return nil, "", mediaErr(err)
	}
	return small, coverType(format), nil
}

// openBook looks up the file of :id and opens it as a book.
func (s *Server) openBook(c echo.Context) (*reader.Book, settings.Values, error) {
	loc, vals, err := s.locateBook(c)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.books.OpenLocated(c.Request().Context(), loc)
	if err != nil {
		return nil, nil, mediaErr(err)
	}
	return b, vals, nil
}

// locateBook looks up the file of :id and finds it on disk, unopened.
func (s *Server) locateBook(c echo.Context) (reader.Located, settings.Values, error) {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return reader.Located{}, nil, err
	}
	ctx := c.Request().Context()
	f, err := s.cat.GetFile(ctx, id)
	if err != nil {
		return reader.Located{}, nil, err
	}
	if !readable(f) {
		return reader.Located{}, nil, httpx.Err(protocol.CodeNotABook, "file %d is a %s (%s), not a book with pages", id, f.Role, model.Deref(f.Format))
	}
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return reader.Located{}, nil, err
	}
	src, err := s.th.CoverSource(ctx, id)
	if err != nil {
		return reader.Located{}, nil, err
	}
	loc, err := s.books.Locate(src)
	if err != nil {
		return reader.Located{}, nil, mediaErr(err)
	}
	return loc, vals, nil
}

// readable: a book or a loose image, never a video.
func readable(f model.File) bool {
	return f.Role.IsBook() && model.Deref(f.Format) != string(protocol.FormatVideo)
}

func maxPageBytes(vals settings.Values) int64 { return vals.Int(settings.ThumbnailMaxSourceMB) << 20 }

func pageNumber(c echo.Context) (int, error) {
	v := c.Param("n")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || strconv.Itoa(n) != v {
		return 0, httpx.Err(protocol.CodeInvalidParameter, "n must be a page number from 1").With("parameter", "n")
	}
	return n, nil
}

func pageWidth(c echo.Context) (int, error) {
	v := c.QueryParam("width")
	if v == "" {
		return 0, nil
	}
	w, err := strconv.Atoi(v)
	if err != nil || w < 1 || w > maxPageWidth {
		return 0, httpx.Err(protocol.CodeInvalidParameter, "width must be an integer from 1 to %d", maxPageWidth).With("parameter", "width")
	}
	return w, nil
}

func pageETag(k reader.Key) string {
	if k.Width > 0 {
		return fmt.Sprintf(`"p%d-%s-%d-w%d"`, k.FileID, k.Version, k.Page, k.Width)
	}
	return fmt.Sprintf(`"p%d-%s-%d"`, k.FileID, k.Version, k.Page)
}

// etagMatches is If-None-Match's weak comparison (RFC 9110 §13.1.2).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// mediaErr turns what reading a book can fail with into API codes.
func mediaErr(err error) error {
	if err == reader.ErrNoPage {
		return httpx.Err(protocol.CodePageNotFound, "no such page")
	}
	code := protocol.CodeOf(err, "")
	switch code {
	case protocol.ErrSourceMissing, protocol.ErrLibraryMissing:
		return httpx.Err(protocol.CodeMediaMissing, "the file is not in its library: %v", err).With("cause", code)
	case protocol.ErrSourceTooLarge:
		return httpx.Err(protocol.CodeMediaTooLarge, "%v", err).With("cause", code)
	case protocol.ErrArchiveCorrupt, protocol.ErrArchiveEncrypted, protocol.ErrArchiveIncomplete,
		protocol.ErrUnsupportedCompression, protocol.ErrDecodeError, protocol.ErrNoPages, protocol.ErrPathViolation:
		return httpx.Err(protocol.CodeMediaUnreadable, "%v", err).With("cause", code)
	}
	return err
}
