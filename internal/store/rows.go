package store

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// The store's names for the shared not-found rows of package sqldb.
type rowKind = sqldb.RowKind

var libraryRow = sqldb.LibraryRow

func missingRow(k rowKind, id any) error { return sqldb.MissingRow(k, id) }

func getRow[T any](ctx context.Context, db sqlx.QueryerContext, k rowKind, q string, id int64) (T, error) {
	return sqldb.GetRow[T](ctx, db, k, q, id)
}
