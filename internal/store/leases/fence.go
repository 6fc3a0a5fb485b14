package leases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// A lease row's own end (finish, fail, retry) matches the fence (see
// sqldb's fence.go) in its UPDATE; the work's writes in other tables check
// it first in their transaction (sqldb.DB.Fenced).

const fenceWhere = sqldb.FenceWhere

// CheckFence reports, without writing, whether f is still the live lease
// of its row (nil) or not (sqldb.ErrLeaseLost). An executor asks it before
// an irreversible step outside the database, such as removing a cache
// file: the answer can go stale at once, so what the step leaves behind
// must be safe to redo or undo by whoever holds the row next.
func (s *Leases) CheckFence(ctx context.Context, f model.Fence) error {
	return s.db.CheckFence(ctx, s.db.R, f)
}

// endLease runs a lease row's own end, an UPDATE of f's table whose WHERE
// clause is fenceWhere (its last four placeholders, which endLease fills),
// as one statement.
func (s *Leases) endLease(ctx context.Context, what string, f model.Fence, query string, args ...any) error {
	err := s.db.WriteOne(ctx, func(q sqlx.ExtContext) error {
		return sqldb.OwnedExec(ctx, q, query, append(args, sqldb.FenceArgs(f, s.db.NowText())...)...)
	})
	return fenceErr(what, f, err)
}

// fenceErr reports a fenced write that matched no row as ErrLeaseLost (an
// ErrNotOwner).
func fenceErr(what string, f model.Fence, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows), errors.Is(err, sqldb.ErrNotOwner):
		return fmt.Errorf("%s: %s: %w", what, f, sqldb.ErrLeaseLost)
	default:
		return fmt.Errorf("%s %d: %w", what, f.ID, err)
	}
}
