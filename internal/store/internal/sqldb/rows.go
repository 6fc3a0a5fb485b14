package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// Application errors of the store. The API maps each to one HTTP status in
// one place; callers compare with errors.Is, never by string.
var (
	// ErrNotFound: the row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the row exists but its state forbids the change.
	ErrConflict = errors.New("conflict")
	// ErrQueueFull: admission refused because a queue is at capacity.
	ErrQueueFull = errors.New("queue full")
	// ErrNotOwner: a lease-path write by a worker that no longer owns the
	// row (recovered, cancelled or finished by someone else).
	ErrNotOwner = errors.New("lease not owned")
	// ErrLeaseLost: a write was refused because the claim it was made for
	// (a Fence) is no longer the row's live lease. It is an ErrNotOwner, so
	// the engine treats it as the lease lost it is.
	// ErrInvalidRequest: a request the store cannot accept (a job kind that
	// is not queued, a scan without library, an unknown priority or
	// checkpoint mode). The API maps it to 400.
	ErrInvalidRequest = errors.New("invalid job request")
	ErrLeaseLost      = fmt.Errorf("%w: the claim's lease was lost", ErrNotOwner)
)

// RowKind names the rows of one table in not-found errors: the code the
// API answers with and the word its message uses.
type RowKind struct{ Code, Name string }

// The kinds of row the store's packages look up by id.
var (
	FileRow      = RowKind{protocol.CodeFileNotFound, "file"}
	JobRow       = RowKind{protocol.CodeJobNotFound, "job"}
	LibraryRow   = RowKind{protocol.CodeLibraryNotFound, "library"}
	ScanRow      = RowKind{protocol.CodeScanNotFound, "scan"}
	SeriesRow    = RowKind{protocol.CodeSeriesNotFound, "series"}
	ThumbnailRow = RowKind{protocol.CodeThumbnailNotFound, "thumbnail"}
)

// MissingRow is ErrNotFound with the code of the missing kind of row.
func MissingRow(k RowKind, id any) error {
	return &protocol.Error{Code: k.Code, Message: fmt.Sprintf("%s %v not found", k.Name, id), Err: ErrNotFound}
}

// GetRow reads the one row that q selects by id into a T: MissingRow(k,
// id) when there is none.
func GetRow[T any](ctx context.Context, db sqlx.QueryerContext, k RowKind, q string, id int64) (T, error) {
	var out T
	err := sqlx.GetContext(ctx, db, &out, q, id)
	if errors.Is(err, sql.ErrNoRows) {
		return out, MissingRow(k, id)
	}
	if err != nil {
		return out, fmt.Errorf("get %s: %w", k.Name, err)
	}
	return out, nil
}

// OwnedExec runs an owner-checked statement and turns "no row matched"
// into ErrNotOwner.
func OwnedExec(ctx context.Context, q sqlx.ExecerContext, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}
