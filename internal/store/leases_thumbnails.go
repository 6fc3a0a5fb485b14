package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// Lease paths of the thumbnails table (protocol §4.3, §7.2).

const thumbProbe = `SELECT EXISTS (SELECT 1 FROM thumbnails WHERE status = 'pending')
	, EXISTS (SELECT 1 FROM thumbnails WHERE ` + staleWhere + `)`

// thumbClaim takes the oldest pending row that never lost a worker; failing
// that, a suspect (recovered_count > 0), but only into a process that runs
// no other cover, and nothing more while a suspect runs. A cover that kills
// workerd so dies alone: the renders beside it are not recovered with it,
// and it reaches MaxRecoveries by itself. On PostgreSQL the rule is kept by
// claiming one row at a time per process (thumbClaims), as SQLite's single
// writer does, while other processes' claims skip the locked rows.
func (s *Store) thumbClaim() string {
	return `UPDATE thumbnails SET status = 'running', worker_id = ?1, worker_heartbeat_at = ?2,
	lease_expires_at = ?3, started_at = ?2, updated_at = ?2
	WHERE id = coalesce(
		(SELECT id FROM thumbnails WHERE status = 'pending' AND recovered_count = 0 ORDER BY created_at, id LIMIT 1` + s.skipLocked() + `),
		(SELECT id FROM thumbnails WHERE status = 'pending' AND recovered_count > 0
			AND NOT EXISTS (SELECT 1 FROM thumbnails r WHERE r.status = 'running' AND r.worker_id = ?1)
			ORDER BY created_at, id LIMIT 1` + s.skipLocked() + `))
	AND NOT EXISTS (SELECT 1 FROM thumbnails r WHERE r.status = 'running' AND r.worker_id = ?1 AND r.recovered_count > 0)
	AND status = 'pending' RETURNING *`
}

// ClaimThumbnail claims a pending row (thumbClaim), recovering stale
// thumbnail rows first (running → pending, or failed at MaxRecoveries)
// when the claim probes (claimGate). It returns nil, nil when nothing is
// eligible.
func (s *Store) ClaimThumbnail(ctx context.Context, workerID string, lease time.Duration) (*Thumbnail, error) {
	var t *Thumbnail
	if s.engine == enginePostgres {
		s.thumbClaims.Lock()
		defer s.thumbClaims.Unlock()
	}
	err := s.claim(ctx, claimPath{gate: &s.gates.thumbnails, probe: thumbProbe, rowLocked: true,
		probeArgs: func(now string) []any { return []any{now} },
		recover:   recoverStaleThumbnails,
		claim: func(q sqlx.QueryerContext, now, expires string) error {
			t = nil
			var row Thumbnail
			err := sqlx.GetContext(ctx, q, &row, s.thumbClaim(), workerID, now, expires)
			if err == nil {
				t = &row
			}
			return err
		}}, lease)
	if err != nil {
		return nil, fmt.Errorf("claim thumbnail: %w", err)
	}
	return t, nil
}

// HeartbeatThumbnail extends the lease of a thumbnail this worker owns.
func (s *Store) HeartbeatThumbnail(ctx context.Context, id int64, workerID string, lease time.Duration) error {
	return s.heartbeat(ctx, "thumbnails", id, workerID, lease)
}

// ThumbnailDone is a successful render.
type ThumbnailDone struct {
	Width, Height, BytesSize int64
}

// FinishThumbnail ends a thumbnail this worker owns as ready, clearing the
// error fields and the retry time (protocol §7.2 success path).
func (s *Store) FinishThumbnail(ctx context.Context, id int64, workerID string, d ThumbnailDone) error {
	err := s.writeOne(ctx, func(q sqlx.ExtContext) error {
		ts := s.nowText()
		return ownedExec(ctx, q, `UPDATE thumbnails SET status = 'ready', width = ?, height = ?, bytes_size = ?,
			error_code = NULL, error_message = NULL, retry_after = NULL, finished_at = ?, lease_expires_at = NULL,
			updated_at = ? WHERE id = ? AND worker_id = ? AND status = 'running'`,
			d.Width, d.Height, d.BytesSize, ts, ts, id, workerID)
	})
	return ownerErr("finish thumbnail", id, err)
}

// FailThumbnail ends a thumbnail this worker owns as failed with code and
// message, counting the error. retry_after is now + ThumbnailBackoff(count),
// or NULL once the row failed ThumbnailMaxErrors times: controld requeues
// only rows whose retry_after passed (RequeueFailedThumbnails).
func (s *Store) FailThumbnail(ctx context.Context, id int64, workerID, code, message string) error {
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		now := s.Now()
		ts := protocol.FormatTime(now)
		var count int64
		if err := tx.GetContext(ctx, &count, `SELECT error_count + 1 FROM thumbnails
			WHERE id = ? AND worker_id = ? AND status = 'running'`, id, workerID); err != nil {
			return err
		}
		var retry any
		if count < ThumbnailMaxErrors {
			retry = protocol.FormatTime(now.Add(ThumbnailBackoff(count)))
		}
		return ownedExec(ctx, tx, `UPDATE thumbnails SET status = 'failed', error_code = ?, error_message = ?,
			error_count = ?, retry_after = ?, finished_at = ?, lease_expires_at = NULL, updated_at = ?
			WHERE id = ? AND worker_id = ? AND status = 'running'`,
			code, message, count, retry, ts, ts, id, workerID)
	})
	return ownerErr("fail thumbnail", id, err)
}

// ReleaseThumbnail hands a thumbnail back on graceful shutdown: running →
// pending with the lease fields cleared.
func (s *Store) ReleaseThumbnail(ctx context.Context, id int64, workerID string) error {
	return s.release(ctx, "thumbnails", id, workerID)
}

// heartbeat is the owner-checked heartbeat of the tables whose heartbeat
// path is worker_heartbeat_at + lease_expires_at + updated_at. table is
// one of this file's constants, never caller input. As HeartbeatJob, it
// never extends an expired lease.
func (s *Store) heartbeat(ctx context.Context, table string, id int64, workerID string, lease time.Duration) error {
	err := s.writeOne(ctx, func(q sqlx.ExtContext) error {
		now := s.Now()
		ts := protocol.FormatTime(now)
		return ownedExec(ctx, q, `UPDATE `+table+` SET worker_heartbeat_at = ?1, lease_expires_at = ?2, updated_at = ?1
			WHERE id = ?3 AND worker_id = ?4 AND status = 'running' AND lease_expires_at > ?1`, ts, protocol.FormatTime(now.Add(lease)), id, workerID)
	})
	return ownerErr("heartbeat "+table, id, err)
}

// release hands a thumbnail or cleanup row back: running → pending.
func (s *Store) release(ctx context.Context, table string, id int64, workerID string) error {
	err := s.writeOne(ctx, func(q sqlx.ExtContext) error {
		return ownedExec(ctx, q, `UPDATE `+table+` SET status = 'pending', worker_id = NULL,
			worker_heartbeat_at = NULL, lease_expires_at = NULL, updated_at = ?
			WHERE id = ? AND worker_id = ? AND status = 'running'`, s.nowText(), id, workerID)
	})
	return ownerErr("release "+table, id, err)
}
