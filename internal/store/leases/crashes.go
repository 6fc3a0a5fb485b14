package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// Crashes and outages (issue 35). A cover or cleanup row that keeps killing
// its worker must end failed (MaxRecoveries), and a job that does so must
// use up its attempts, but a stale lease alone does
// not say the worker died: a worker cut off from the database for longer
// than its lease (a network cut, a PostgreSQL restart, a frozen disk) loses
// its row exactly like one that was killed. The difference shows only in
// the holder's workers row (§4.7), which a live worker refreshes every
// lease/3 once it reaches the database again, and which a dead one never
// refreshes. So a stale row is judged by its holder before it is recovered:
//
//   - crashed: the holder has no workers row (never registered, or deleted),
//     or registered again after its last heartbeat of the row (a restart
//     under the same id: the process that held the row is gone), or its
//     workers row is DeadAfterLeases of the row's leases old. The recovery
//     counts (recovered_count + 1, failed at MaxRecoveries; a job's
//     lease_expired, an attempt).
//   - lost: the holder refreshed its workers row after the row's lease ran
//     out (it is alive and reaches the database; it merely lost the lease),
//     or it stopped gracefully. The row goes back to pending uncounted (a
//     job to retryable with lease_lost, which burns no attempt).
//   - undecided: neither yet. The row stays as it is (running and stale:
//     no heartbeat extends an expired lease, and no fenced write passes
//     one) until one verdict holds, at most DeadAfterLeases leases after
//     the holder was last seen.
//
// The price is that the row of a worker that really died is recovered up
// to DeadAfterLeases leases after its death instead of one; an outage
// longer than that still counts, as nothing in the database can tell it
// from a death while it lasts.

// DeadAfterLeases is how many of a row's leases its holder's workers row
// may go unrefreshed before the holder is taken as dead: workerd
// healthcheck's limit (§4.7).
const DeadAfterLeases = 3

// holderVerdict is the judgement of a stale row's holder.
type holderVerdict int

const (
	holderUndecided holderVerdict = iota
	holderCrashed
	holderLost
)

// staleHolder is a stale row with its holder's workers row (LEFT JOIN:
// the workers fields are NULL when there is none).
type staleHolder struct {
	ID         int64             `db:"id"`
	Heartbeat  protocol.NullTime `db:"worker_heartbeat_at"`
	Expires    protocol.NullTime `db:"lease_expires_at"`
	Registered protocol.NullTime `db:"w_started_at"`
	LastSeen   protocol.NullTime `db:"w_last_seen_at"`
	Stopped    protocol.NullTime `db:"w_stopped_at"`
}

// verdict judges h at now (see the comment at the top of this file).
func (h staleHolder) verdict(now time.Time) holderVerdict {
	lease := protocol.DefaultLeaseDuration
	if h.Heartbeat.Valid && h.Expires.Valid && h.Expires.Sub(h.Heartbeat.Time.Time) > 0 {
		lease = h.Expires.Sub(h.Heartbeat.Time.Time)
	}
	switch {
	case !h.LastSeen.Valid || !h.Registered.Valid:
		return holderCrashed
	case h.Heartbeat.Valid && h.Registered.After(h.Heartbeat.Time.Time):
		return holderCrashed
	case h.Stopped.Valid:
		return holderLost
	case h.Expires.Valid && h.LastSeen.After(h.Expires.Time.Time):
		return holderLost
	case now.Sub(h.LastSeen.Time.Time) >= DeadAfterLeases*lease:
		return holderCrashed
	}
	return holderUndecided
}

// recoverStaleCounted puts the stale rows of a lease table without retry
// bookkeeping back to pending, lease fields cleared; a recovery whose
// holder crashed raises recovered_count, and the MaxRecoveries-th fails
// the row with code. A row whose holder is undecided is left for a later
// pass. Stale rows are rare: each is judged and written on its own, and
// the write matches it only while it is still stale.
func recoverStaleCounted(ctx context.Context, tx *sqlx.Tx, table, code string, now time.Time) (int64, error) {
	ts := protocol.FormatTime(now)
	stale, err := staleHolders(ctx, tx, table, ts)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, h := range stale {
		bump := 0
		switch h.verdict(now) {
		case holderUndecided:
			continue
		case holderCrashed:
			bump = 1
		}
		res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET recovered_count = recovered_count + ?5,
			status = CASE WHEN recovered_count + ?5 >= ?1 THEN 'failed' ELSE 'pending' END,
			error_code = CASE WHEN recovered_count + ?5 >= ?1 THEN ?2 ELSE error_code END,
			error_message = CASE WHEN recovered_count + ?5 >= ?1 THEN ?3 ELSE error_message END,
			finished_at = CASE WHEN recovered_count + ?5 >= ?1 THEN ?4 ELSE finished_at END,
			worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, updated_at = ?4
			WHERE id = ?6 AND status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= ?4)`,
			MaxRecoveries, code, fmt.Sprintf("the worker died %d times while holding this row", MaxRecoveries), ts, bump, h.ID)
		if err != nil {
			return 0, fmt.Errorf("recover %s %d: %w", table, h.ID, err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// staleHolders reads the stale rows of a lease table with their holders'
// workers rows. table is a constant of this package, never caller input.
func staleHolders(ctx context.Context, tx *sqlx.Tx, table, ts string) ([]staleHolder, error) {
	var stale []staleHolder
	if err := tx.SelectContext(ctx, &stale, `SELECT t.id, t.worker_heartbeat_at, t.lease_expires_at,
		w.started_at AS w_started_at, w.last_seen_at AS w_last_seen_at, w.stopped_at AS w_stopped_at
		FROM `+table+` t LEFT JOIN workers w ON w.worker_id = t.worker_id
		WHERE t.status = 'running' AND (t.lease_expires_at IS NULL OR t.lease_expires_at <= ?)`, ts); err != nil {
		return nil, fmt.Errorf("recover %s: %w", table, err)
	}
	return stale, nil
}
