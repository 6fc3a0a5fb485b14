package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// I/O budget buckets shared by every workerd process (protocol §7.4).
const (
	BucketThumbnailIO = "thumbnail_io_global"
	BucketHashIO      = "hash_io_global"
)

// ReserveIO reserves bytes from the DB-backed token bucket named bucket,
// refilled at bytesPerSec, and returns how long the caller must wait before
// doing the I/O. The bucket is one row of io_rate_limits holding the instant
// (ms since the epoch) at which the budget is next free: a reservation
// starts at max(that instant, now) and pushes it by bytes/bytesPerSec. The
// row is inserted on first use. Because the read-modify-write happens in one
// BEGIN IMMEDIATE transaction, all processes draw from one budget.
// bytesPerSec ≤ 0 means unlimited: no wait and no write.
func (s *Store) ReserveIO(ctx context.Context, bucket string, bytes, bytesPerSec int64) (time.Duration, error) {
	if bytesPerSec <= 0 || bytes <= 0 {
		return 0, nil
	}
	cost := (bytes*1000 + bytesPerSec - 1) / bytesPerSec // ms, rounded up
	var wait int64
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		now := s.Now()
		nowMS := now.UnixMilli()
		var next int64
		err := tx.GetContext(ctx, &next, `SELECT next_available_at_ms FROM io_rate_limits WHERE bucket_key = ?`, bucket)
		if errors.Is(err, sql.ErrNoRows) {
			wait = 0
			_, err = tx.ExecContext(ctx, `INSERT INTO io_rate_limits (bucket_key, next_available_at_ms, updated_at)
				VALUES (?, ?, ?)`, bucket, nowMS+cost, s.nowText())
			return err
		}
		if err != nil {
			return err
		}
		start := max(next, nowMS)
		wait = start - nowMS
		_, err = tx.ExecContext(ctx, `UPDATE io_rate_limits SET next_available_at_ms = ?, updated_at = ?
			WHERE bucket_key = ?`, start+cost, s.nowText(), bucket)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reserve io %s: %w", bucket, err)
	}
	return time.Duration(wait) * time.Millisecond, nil
}
