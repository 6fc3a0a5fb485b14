package httpx

import (
	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// NaturalOrder reads ?sort= of a list that has a natural order (natural,
// the default) and the id order (id), and, for the natural order, the
// cursor it pages with. A cursor of the other order is refused: the two
// are not interchangeable.
func NaturalOrder(c echo.Context, natural string) (byID bool, after *model.SortAnchor, err error) {
	switch c.QueryParam("sort") {
	case "", natural:
	case "id":
		return true, nil, nil
	default:
		return false, nil, Err(protocol.CodeInvalidParameter, "sort: want %s or id, got %q", natural, c.QueryParam("sort")).
			With("parameter", "sort")
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		sc, err := DecodeSortCursor(cur)
		if err != nil {
			return false, nil, InvalidCursor()
		}
		after = &sc
	}
	return false, after, nil
}

func SortCursor(key string, id int64) string {
	return EncodeCursor(model.SortAnchor{Key: key, ID: id})
}
