package duplicates

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/settings"
	dupstore "github.com/bindery-nas/bindery/internal/store/duplicates"
)

type similarCoversJSON struct {
	Distance int             `json:"distance"`
	Books    []coverBookJSON `json:"books"`
}

type coverBookJSON struct {
	ID           int64   `json:"id"`
	LibraryID    int64   `json:"library_id"`
	RelativePath string  `json:"relative_path"`
	Format       *string `json:"format"`
	SizeBytes    int64   `json:"size_bytes"`
	CoverHash    string  `json:"cover_hash"`
	CoverURL     string  `json:"cover_url"`
}

type coverPairCursor struct {
	Distance int   `json:"d"`
	A        int64 `json:"a"`
	B        int64 `json:"b"`
}

// listSimilarCovers pages the pairs of books whose cover hashes are within
// samebook.cover_distance bits and that no byte-duplicate or same-book
// group already ties, closest first; the cursor is the last pair's
// (distance, first id, second id). A report: never a delete plan's input.
func (s *Server) listSimilarCovers(c echo.Context) error {
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	var after dupstore.CoverPairAfter
	if cur := c.QueryParam("cursor"); cur != "" {
		var pc coverPairCursor
		if httpx.DecodeCursor(cur, &pc) != nil || pc.A < 1 || pc.B <= pc.A || pc.Distance < 0 || pc.Distance > 64 {
			return httpx.InvalidCursor()
		}
		after = dupstore.CoverPairAfter{Distance: pc.Distance, A: pc.A, B: pc.B}
	}
	ctx := c.Request().Context()
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	pairs, err := s.dp.SimilarCovers(ctx, after, limit+1, int(vals.Int(settings.SameBookCoverDistance)), dupstore.SameBookRules{
		Contains: int(vals.Int(settings.SameBookContainsPages)), CommonMinSeries: int(vals.Int(settings.SameBookCommonPagesMinSeries))})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, httpx.MakePage(pairs, limit, s.similarCoversView, func(p dupstore.SimilarCoverPair) string {
		return httpx.EncodeCursor(coverPairCursor{Distance: p.Distance, A: p.A.ID, B: p.B.ID})
	}))
}

func (s *Server) similarCoversView(p dupstore.SimilarCoverPair) similarCoversJSON {
	book := func(b dupstore.CoverBook) coverBookJSON {
		return coverBookJSON{ID: b.ID, LibraryID: b.LibraryID, RelativePath: b.RelativePath, Format: b.Format,
			SizeBytes: b.SizeBytes, CoverHash: fmt.Sprintf("%016x", uint64(b.CoverHash)),
			CoverURL: s.coverURL(b.ID, b.CoverVersion())}
	}
	return similarCoversJSON{Distance: p.Distance, Books: []coverBookJSON{book(p.A), book(p.B)}}
}
