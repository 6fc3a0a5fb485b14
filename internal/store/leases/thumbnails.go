package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/backoff"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
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
func (s *Leases) thumbClaim() string {
	return `UPDATE thumbnails SET status = 'running', worker_id = ?1, worker_heartbeat_at = ?2,
	lease_expires_at = ?3, started_at = ?2, updated_at = ?2, lease_epoch = lease_epoch + 1
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
func (s *Leases) ClaimThumbnail(ctx context.Context, workerID string, lease time.Duration) (*model.Thumbnail, error) {
	if s.db.Postgres {
		s.thumbClaims.Lock()
		defer s.thumbClaims.Unlock()
	}
	t, err := claimRow[model.Thumbnail](ctx, s, claimPath{gate: &s.gates.thumbnails, probe: thumbProbe, rowLocked: true,
		probeArgs: func(now string) []any { return []any{now} },
		recover:   recoverStaleThumbnails,
		query:     s.thumbClaim(),
		args:      func(now, expires string) []any { return []any{workerID, now, expires} }}, lease)
	if err != nil {
		return nil, fmt.Errorf("claim thumbnail: %w", err)
	}
	return t, nil
}

// ThumbnailDone is a successful render.
type ThumbnailDone struct {
	Width, Height, BytesSize int64
	// CoverHash is the ready cover's dHash (thumbs.CoverHash); nil writes
	// NULL.
	CoverHash *int64
}

// FinishThumbnail ends the thumbnail of claim f as ready with its size and
// cover hash, clearing the error fields and the retry time (protocol §7.2
// success path). The UPDATE
// matches the claim's token (fenceWhere): a row recovered, claimed
// again, or whose lease ran out is not written (ErrLeaseLost).
func (s *Leases) FinishThumbnail(ctx context.Context, f model.Fence, d ThumbnailDone) error {
	ts := s.db.NowText()
	return s.endLease(ctx, "finish thumbnail", f, `UPDATE thumbnails SET status = 'ready', width = ?, height = ?,
		bytes_size = ?, cover_hash = ?, error_code = NULL, error_message = NULL, retry_after = NULL, finished_at = ?,
		lease_expires_at = NULL, updated_at = ? WHERE `+fenceWhere, d.Width, d.Height, d.BytesSize, d.CoverHash, ts, ts)
}

// FailThumbnail ends the thumbnail of claim f as failed with code and
// message, counting the error. retry_after is now + backoff.Thumbnail(count),
// or NULL once the row failed backoff.ThumbnailMaxErrors times: controld requeues
// only rows whose retry_after passed (RequeueFailedThumbnails). Fenced as
// FinishThumbnail.
func (s *Leases) FailThumbnail(ctx context.Context, f model.Fence, code, message string) error {
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		now := s.db.Now()
		ts := protocol.FormatTime(now)
		var count int64
		if err := tx.GetContext(ctx, &count, `SELECT error_count + 1 FROM thumbnails WHERE id = ?`, f.ID); err != nil {
			return err
		}
		var retry any
		if count < backoff.ThumbnailMaxErrors {
			retry = protocol.FormatTime(now.Add(backoff.Thumbnail(count)))
		}
		return sqldb.OwnedExec(ctx, tx, `UPDATE thumbnails SET status = 'failed', error_code = ?, error_message = ?,
			error_count = ?, retry_after = ?, finished_at = ?, lease_expires_at = NULL, updated_at = ?
			WHERE id = ?`, code, message, count, retry, ts, ts, f.ID)
	})
	return fenceErr("fail thumbnail", f, err)
}
