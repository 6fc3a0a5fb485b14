package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// The four lease tables (model.LeaseTable, protocol §4) share the lease
// columns (model.Lease), the stale rule (staleWhere) and the fence
// (model.Fence); what differs is how a row is claimed, recovered and
// handed back, which leaseTable describes.

// leaseTable is what the generic lease paths know of one table: the
// statements built from its name once, and its own recovery and release.
type leaseTable struct {
	name model.LeaseTable
	// heartbeat extends a live claim's lease: now, expiry, now, then
	// fenceWhere's arguments. Jobs have their own (HeartbeatJob: progress).
	heartbeat string
	// release hands back every running row of a worker (ReleaseWorker), or
	// one with releaseOne appended; releaseArgs builds its arguments.
	release     string
	releaseArgs func(ts, workerID string) []any
	// recover takes the table's stale rows back (RecoverStale, claims).
	recover func(context.Context, *sqlx.Tx, time.Time) (int64, error)
}

// releaseOne narrows a release to one claim; its arguments, id and epoch,
// follow the release's.
const releaseOne = ` AND id = ? AND lease_epoch = ?`

// leaseTables are the four tables, in the order RecoverStale visits them.
var leaseTables = describeLeaseTables()

func describeLeaseTables() [4]leaseTable {
	return [...]leaseTable{
		newLeaseTable("jobs", releaseJobSQL, releaseJobArgs, recoverStaleJobs),
		newLeaseTable("thumbnails", `UPDATE thumbnails SET `+releasePending, pendingArgs, recoverStaleThumbnails),
		newLeaseTable("thumbnail_cleanup_jobs", `UPDATE thumbnail_cleanup_jobs SET `+releasePending, pendingArgs, recoverStaleCleanup),
		newLeaseTable("wal_maintenance_jobs", releaseWALSQL, releaseWALArgs, recoverStaleWAL),
	}
}

func newLeaseTable(name, release string, releaseArgs func(ts, workerID string) []any,
	recover func(context.Context, *sqlx.Tx, time.Time) (int64, error)) leaseTable {
	return leaseTable{
		name: model.LeaseTable(name),
		heartbeat: `UPDATE ` + name + ` SET worker_heartbeat_at = ?, lease_expires_at = ?, updated_at = ?
			WHERE ` + fenceWhere,
		release:     release,
		releaseArgs: releaseArgs,
		recover:     recover,
	}
}

// desc returns the table's description, or an error for a name that is
// not a lease table (a Fence built by hand).
func descOf(t model.LeaseTable) (*leaseTable, error) {
	for i := range leaseTables {
		if leaseTables[i].name == t {
			return &leaseTables[i], nil
		}
	}
	return nil, fmt.Errorf("%q is not a lease table", string(t))
}

// releasePending: a cover or cleanup row goes back to pending.
const releasePending = `status = 'pending', worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL,
	updated_at = ? WHERE worker_id = ? AND status = 'running'`

func pendingArgs(ts, workerID string) []any { return []any{ts, workerID} }

// releaseWALSQL: a WAL row becomes retryable, due at once, retry_count
// unchanged (a shutdown is no failure).
const releaseWALSQL = `UPDATE wal_maintenance_jobs SET status = 'retryable', retry_after = ?,
	worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, error_code = ?, error_message = ?,
	finished_at = NULL, updated_at = ? WHERE worker_id = ? AND status = 'running'`

func releaseWALArgs(ts, workerID string) []any {
	return []any{ts, protocol.ErrWorkerShutdown, "worker shut down before the checkpoint finished", ts, workerID}
}

// HeartbeatLease extends the lease of claim f on a cover, cleanup or WAL
// row (a job's heartbeat is HeartbeatJob: it carries progress). It matches
// the claim's token, so it never extends an expired lease, nor another
// claim's (ErrLeaseLost).
func (s *Leases) HeartbeatLease(ctx context.Context, f model.Fence, lease time.Duration) error {
	d, err := descOf(f.Table)
	if err != nil {
		return err
	}
	now := s.db.Now()
	ts := protocol.FormatTime(now)
	return s.endLease(ctx, "heartbeat "+d.name.Noun(), f, d.heartbeat, ts, protocol.FormatTime(now.Add(lease)), ts)
}

// ReleaseLease hands the row of claim f back on graceful shutdown, as its
// table's release says (jobs and WAL rows: retryable with worker_shutdown;
// covers and cleanups: pending). It matches the claim's token, expired or
// not: a release is what recovery would do, without counting a crash.
func (s *Leases) ReleaseLease(ctx context.Context, f model.Fence) error {
	d, err := descOf(f.Table)
	if err != nil {
		return err
	}
	err = s.db.WriteOne(ctx, func(q sqlx.ExtContext) error {
		return sqldb.OwnedExec(ctx, q, d.release+releaseOne, append(d.releaseArgs(s.db.NowText(), f.WorkerID), f.ID, f.Epoch)...)
	})
	return fenceErr("release "+d.name.Noun(), f, err)
}

// slot is the count of table t.
func (c *RecoverCounts) slot(t model.LeaseTable) *int64 {
	switch t {
	case model.LeaseJobs:
		return &c.Jobs
	case model.LeaseThumbnails:
		return &c.Thumbnails
	case model.LeaseCleanup:
		return &c.Cleanup
	default:
		return &c.WAL
	}
}

// ReleaseWorker hands back every row of the four lease tables still
// running under workerID, as the per-row Release paths do. workerd calls it
// last on shutdown, for rows whose executor did not return in time.
func (s *Leases) ReleaseWorker(ctx context.Context, workerID string) (RecoverCounts, error) {
	var c RecoverCounts
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		c = RecoverCounts{}
		ts := s.db.NowText()
		for _, t := range leaseTables {
			res, err := tx.ExecContext(ctx, t.release, t.releaseArgs(ts, workerID)...)
			if err == nil {
				*c.slot(t.name), err = res.RowsAffected()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return RecoverCounts{}, fmt.Errorf("release worker %s: %w", workerID, err)
	}
	return c, nil
}

// RecoverStale recovers the stale rows of all four lease tables (protocol
// §4): running rows whose lease_expires_at is NULL or not in the future.
// It is what controld runs on a timer and what the admin API exposes; the
// claim paths run the same per-table recovery in their own transaction.
// A live lease is never touched, and a second pass finds nothing to do.
func (s *Leases) RecoverStale(ctx context.Context) (RecoverCounts, error) {
	var c RecoverCounts
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		c = RecoverCounts{}
		now := s.db.Now()
		for _, t := range leaseTables {
			n, err := t.recover(ctx, tx, now)
			if err != nil {
				return err
			}
			*c.slot(t.name) = n
		}
		return nil
	})
	if err != nil {
		return RecoverCounts{}, fmt.Errorf("recover stale: %w", err)
	}
	return c, nil
}
