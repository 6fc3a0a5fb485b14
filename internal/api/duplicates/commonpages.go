package duplicates

import (
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/settings"
	dupstore "github.com/bindery-nas/bindery/internal/store/duplicates"
)

type commonPageJSON struct {
	Digest   string `json:"digest"`
	Books    int64  `json:"books"`
	Series   int64  `json:"series"`
	FileID   int64  `json:"example_file_id"`
	Page     int64  `json:"example_page"`
	ImageURL string `json:"image_url"`
}

type commonPageCursor struct {
	Digest string `json:"d"`
}

// listCommonPages pages the page digests found in the books of at least
// samebook.common_pages_min_series series, in digest order, each with one
// book page that shows it.
func (s *Server) listCommonPages(c echo.Context) error {
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	var after []byte
	if cur := c.QueryParam("cursor"); cur != "" {
		var pc commonPageCursor
		if httpx.DecodeCursor(cur, &pc) != nil {
			return httpx.InvalidCursor()
		}
		if after, err = hex.DecodeString(pc.Digest); err != nil || len(after) != 32 {
			return httpx.InvalidCursor()
		}
	}
	ctx := c.Request().Context()
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	pages, err := s.dp.CommonPages(ctx, int(vals.Int(settings.SameBookCommonPagesMinSeries)), after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, httpx.MakePage(pages, limit, commonPageView, func(p dupstore.CommonPage) string {
		return httpx.EncodeCursor(commonPageCursor{Digest: hex.EncodeToString(p.Digest)})
	}))
}

func commonPageView(p dupstore.CommonPage) commonPageJSON {
	return commonPageJSON{Digest: hex.EncodeToString(p.Digest), Books: p.Books, Series: p.Series,
		FileID: p.ExampleFileID, Page: p.ExamplePageSeq + 1,
		ImageURL: fmt.Sprintf("%s/files/%d/pages/%d", httpx.Base, p.ExampleFileID, p.ExamplePageSeq+1)}
}
