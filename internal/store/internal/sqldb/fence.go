package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
)

// Fencing (DESIGN invariant 10). Owner checks on a lease row (heartbeat,
// finish) stop a worker that lost its lease from writing the row, but the
// work itself writes other tables: files, hashes, series, scan sessions,
// covers, cleaned thumbnail rows. Every such write therefore carries the
// claim's token, a Fence, and runs in a transaction that first checks, by
// the primary key, that the lease row is still running, owned by that
// worker, unexpired, and at the claim's lease_epoch (raised by every
// claim, so a later claim of the same row by the same worker is another
// token). The check and the writes commit together or not at all:
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
// UPDATE (package leases). A write whose check fails changes nothing and
// returns ErrLeaseLost.

// FenceWhere matches the lease row of a live Fence, in every lease table;
// its arguments are id, worker, epoch and now (FenceArgs).
const FenceWhere = `id = ? AND worker_id = ? AND status = 'running' AND lease_epoch = ? AND lease_expires_at > ?`

// FenceArgs are FenceWhere's arguments for f at now (protocol text).
func FenceArgs(f model.Fence, now string) []any {
	return []any{f.ID, f.WorkerID, f.Epoch, now}
}

// fenceChecks select 1 for a live Fence, per lease table.
var fenceChecks = map[model.LeaseTable]string{
	model.LeaseJobs:       `SELECT 1 FROM jobs WHERE ` + FenceWhere,
	model.LeaseThumbnails: `SELECT 1 FROM thumbnails WHERE ` + FenceWhere,
	model.LeaseCleanup:    `SELECT 1 FROM thumbnail_cleanup_jobs WHERE ` + FenceWhere,
	model.LeaseWAL:        `SELECT 1 FROM wal_maintenance_jobs WHERE ` + FenceWhere,
}

// Fenced is Write for a claim's work: the transaction first checks that
// the claim still holds its lease, else it fails with ErrLeaseLost and
// writes nothing.
func (d *DB) Fenced(ctx context.Context, f model.Fence, fn func(tx *sqlx.Tx) error) error {
	return d.Write(ctx, func(tx *sqlx.Tx) error {
		if err := d.CheckFence(ctx, tx, f); err != nil {
			return err
		}
		return fn(tx)
	})
}

// CheckFence checks, without writing, that f is the live lease of its
// row: at the start of a transaction (the row locked FOR SHARE on
// PostgreSQL) or alone on a pool; else ErrLeaseLost.
func (d *DB) CheckFence(ctx context.Context, q sqlx.QueryerContext, f model.Fence) error {
	check, ok := fenceChecks[f.Table]
	if !ok {
		return fmt.Errorf("%q is not a lease table", string(f.Table))
	}
	lock := d.Pick(``, ` FOR SHARE`)
	if _, inTx := q.(*sqlx.Tx); !inTx {
		lock = ``
	}
	var one int
	err := q.QueryRowxContext(ctx, check+lock, FenceArgs(f, d.NowText())...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", f, ErrLeaseLost)
	}
	return err
}
