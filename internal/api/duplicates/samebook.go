package duplicates

import (
	"encoding/hex"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/settings"
	dupstore "github.com/bindery-nas/bindery/internal/store/duplicates"
)

type sameBookGroupJSON struct {
	Key   string                 `json:"key"`
	Kind  dupstore.BookGroupKind `json:"kind"`
	Books []sameBookJSON         `json:"books"`
}

type sameBookJSON struct {
	ID           int64   `json:"id"`
	LibraryID    int64   `json:"library_id"`
	RelativePath string  `json:"relative_path"`
	Format       *string `json:"format"`
	SizeBytes    int64   `json:"size_bytes"`
	TotalPages   *int64  `json:"total_pages"`
	ExtraStart   int     `json:"extra_pages_start"`
	ExtraEnd     int     `json:"extra_pages_end"`
}

type sameBookCursor struct {
	Kind dupstore.BookGroupKind `json:"t,omitempty"` // absent in cursors of before the kinds: same_pages_by_index
	Key  string                 `json:"k"`
}

// listSameBooks pages the groups of books that hold the same pages in
// other containers, in (kind, key) order; the cursor is the last group's
// kind and key.
func (s *Server) listSameBooks(c echo.Context) error {
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	var after dupstore.SameBookAfter
	if cur := c.QueryParam("cursor"); cur != "" {
		if after, err = decodeSameBookCursor(cur); err != nil {
			return err
		}
	}
	ctx := c.Request().Context()
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	groups, err := s.dp.SameBookGroups(ctx, after, limit+1, dupstore.SameBookRules{
		Contains: int(vals.Int(settings.SameBookContainsPages)), CommonMinSeries: int(vals.Int(settings.SameBookCommonPagesMinSeries))})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, httpx.MakePage(groups, limit, sameBookGroupView, func(g dupstore.SameBookGroup) string {
		return httpx.EncodeCursor(sameBookCursor{Kind: g.Kind, Key: hex.EncodeToString(g.Key)})
	}))
}

func decodeSameBookCursor(cur string) (dupstore.SameBookAfter, error) {
	var sc sameBookCursor
	if httpx.DecodeCursor(cur, &sc) != nil {
		return dupstore.SameBookAfter{}, httpx.InvalidCursor()
	}
	if sc.Kind == "" {
		sc.Kind = dupstore.KindSamePagesByIndex
	}
	key, err := hex.DecodeString(sc.Key)
	if err != nil || len(key) != 32 || !sc.Kind.Valid() {
		return dupstore.SameBookAfter{}, httpx.InvalidCursor()
	}
	return dupstore.SameBookAfter{Kind: sc.Kind, Key: key}, nil
}

func sameBookGroupView(g dupstore.SameBookGroup) sameBookGroupJSON {
	out := sameBookGroupJSON{Key: hex.EncodeToString(g.Key), Kind: g.Kind, Books: make([]sameBookJSON, 0, len(g.Books))}
	for _, b := range g.Books {
		out.Books = append(out.Books, sameBookJSON{ID: b.ID, LibraryID: b.LibraryID, RelativePath: b.RelativePath,
			Format: b.Format, SizeBytes: b.SizeBytes, TotalPages: b.TotalPages,
			ExtraStart: b.ExtraStart, ExtraEnd: b.ExtraEnd})
	}
	return out
}
