package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// missingRow is ErrNotFound with a code naming what was missing
// ("library_not_found", "scan_not_found", ...).
func missingRow(what string, id any) error {
	return &protocol.Error{Code: what + "_not_found", Message: fmt.Sprintf("%s %v not found", what, id), Err: ErrNotFound}
}

// getRow reads the one row that q selects by id into a T: missingRow(what,
// id) when there is none.
func getRow[T any](ctx context.Context, db sqlx.QueryerContext, what, q string, id int64) (T, error) {
	var out T
	err := sqlx.GetContext(ctx, db, &out, q, id)
	if errors.Is(err, sql.ErrNoRows) {
		return out, missingRow(what, id)
	}
	if err != nil {
		return out, fmt.Errorf("get %s: %w", what, err)
	}
	return out, nil
}
