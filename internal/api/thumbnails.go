package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/protocol"
)

type createThumbnailBody struct {
	FileID *int64  `json:"file_id"`
	Format *string `json:"format"`
}

// createThumbnail admits a cover render (protocol §4.3): one conditional
// INSERT in the store, atomic under concurrent requests, refused with 429
// once pending+running reach thumbnail.queue.capacity.
func (s *Server) createThumbnail(c echo.Context) error {
	var b createThumbnailBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.FileID == nil || *b.FileID <= 0 {
		return httpx.Fieldf("file_id", "required: a positive integer")
	}
	ctx := c.Request().Context()
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	format := protocol.ImageFormat(vals.Enum(settings.ScanCoverFormat))
	if b.Format != nil {
		if format, err = protocol.ParseImageFormat(*b.Format); err != nil {
			return httpx.Fieldf("format", "want webp or jpeg, got %q", *b.Format)
		}
	}
	t, created, err := s.th.AdmitThumbnail(ctx, *b.FileID, format,
		vals.Int(settings.ThumbnailQueueCapacity), vals.Int(settings.CoverCacheShardCount))
	return s.admitted(c, t, created, err)
}

func (s *Server) getThumbnail(c echo.Context) error {
	return httpx.GetByID(c, s.th.GetThumbnail, views.Thumbnail)
}

func (s *Server) thumbnailMetrics(c echo.Context) error {
	m, err := s.th.ThumbnailMetrics(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views.ThumbnailMetrics(m))
}
