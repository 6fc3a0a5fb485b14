package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/jmoiron/sqlx"
)

// Fencing (DESIGN invariant 10, issue 35). Owner checks on a lease row
// (heartbeat, finish) stop a worker that lost its lease from writing the
// row, but the work itself writes other tables: files, hashes, series,
// scan sessions, covers, cleaned thumbnail rows. Every such write therefore
// carries the claim's token, a Fence, and runs in a transaction that first
// checks, by the primary key, that the lease row is still running, owned
// by that worker, unexpired, and at the claim's lease_epoch (raised by
// every claim, so a later claim of the same row by the same worker is
// another token). The check and the writes commit together or not at all:
//
//   - on SQLite the write transaction (BEGIN IMMEDIATE) is the only writer
//     while it runs, so nothing can recover the row between the check and
//     the commit;
//   - on PostgreSQL the check locks the row FOR SHARE: a recovery (or any
//     other UPDATE of the row) waits for the commit, and a recovery that
//     committed first fails the check, or the transaction with a
//     serialization failure that is run again and then fails the check.
//
// A row's own end (finish, fail, retry) matches the same condition in its
// UPDATE (endLease). A write whose check fails changes nothing and returns
// ErrLeaseLost.

// ErrLeaseLost: see sqldb.ErrLeaseLost.
var ErrLeaseLost = sqldb.ErrLeaseLost

const fenceWhere = sqldb.FenceWhere

func (s *Store) fenceArgs(f model.Fence) []any {
	return sqldb.FenceArgs(f, s.nowText())
}

// fenced runs fn in one write transaction that first checks f.
func (s *Store) fenced(ctx context.Context, f model.Fence, fn func(tx *sqlx.Tx) error) error {
	return s.write(ctx, func(tx *sqlx.Tx) error {
		if err := s.checkFence(ctx, tx, f); err != nil {
			return err
		}
		return fn(tx)
	})
}

// checkFence is the check of fenced, at the start of its transaction (the
// row locked FOR SHARE on PostgreSQL), or alone on the reader pool, as a
// question (CheckFence).
func (s *Store) checkFence(ctx context.Context, q sqlx.QueryerContext, f model.Fence) error {
	t, err := descOf(f.Table)
	if err != nil {
		return err
	}
	lock := s.pick(``, ` FOR SHARE`)
	if _, inTx := q.(*sqlx.Tx); !inTx {
		lock = ``
	}
	var one int
	err = q.QueryRowxContext(ctx, t.check+lock, s.fenceArgs(f)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", f, ErrLeaseLost)
	}
	return err
}

// CheckFence reports, without writing, whether f is still the live lease
// of its row (nil) or not (ErrLeaseLost). An executor asks it before an
// irreversible step outside the database, such as removing a cache file:
// the answer can go stale at once, so what the step leaves behind must be
// safe to redo or undo by whoever holds the row next.
func (s *Store) CheckFence(ctx context.Context, f model.Fence) error {
	return s.checkFence(ctx, s.r, f)
}

// endLease runs a lease row's own end, an UPDATE of f's table whose WHERE
// clause is fenceWhere (its last four placeholders, which endLease fills),
// as one statement.
func (s *Store) endLease(ctx context.Context, what string, f model.Fence, query string, args ...any) error {
	err := s.writeOne(ctx, func(q sqlx.ExtContext) error {
		return ownedExec(ctx, q, query, append(args, s.fenceArgs(f)...)...)
	})
	return fenceErr(what, f, err)
}

// fenceErr reports a fenced write that matched no row as ErrLeaseLost (an
// ErrNotOwner).
func fenceErr(what string, f model.Fence, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows), errors.Is(err, ErrNotOwner):
		return fmt.Errorf("%s: %s: %w", what, f, ErrLeaseLost)
	default:
		return fmt.Errorf("%s %d: %w", what, f.ID, err)
	}
}
