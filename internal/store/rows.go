package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// rowKind names the rows of one table in not-found errors: the code the
// API answers with and the word its message uses.
type rowKind struct{ code, name string }

var (
	fileRow      = rowKind{protocol.CodeFileNotFound, "file"}
	jobRow       = rowKind{protocol.CodeJobNotFound, "job"}
	libraryRow   = rowKind{protocol.CodeLibraryNotFound, "library"}
	scanRow      = rowKind{protocol.CodeScanNotFound, "scan"}
	seriesRow    = rowKind{protocol.CodeSeriesNotFound, "series"}
	thumbnailRow = rowKind{protocol.CodeThumbnailNotFound, "thumbnail"}
)

// missingRow is ErrNotFound with the code of the missing kind of row.
func missingRow(k rowKind, id any) error {
	return &protocol.Error{Code: k.code, Message: fmt.Sprintf("%s %v not found", k.name, id), Err: ErrNotFound}
}

// getRow reads the one row that q selects by id into a T: missingRow(k,
// id) when there is none.
func getRow[T any](ctx context.Context, db sqlx.QueryerContext, k rowKind, q string, id int64) (T, error) {
	var out T
	err := sqlx.GetContext(ctx, db, &out, q, id)
	if errors.Is(err, sql.ErrNoRows) {
		return out, missingRow(k, id)
	}
	if err != nil {
		return out, fmt.Errorf("get %s: %w", k.name, err)
	}
	return out, nil
}

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T { return model.Deref(p) }
