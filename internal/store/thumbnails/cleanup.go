package thumbnails

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// Thumbnail cleanup (protocol §4.4): controld schedules rows of
// thumbnail_cleanup_jobs, workerd's cleanup executor deletes the cache files
// and the ready/failed thumbnail rows of the row's group. Group keys:
//
//	library:<id>  every thumbnail of the library (library deleted)
//	file:<id>     every thumbnail of one file (file missing too long)
//	shards:<n>    thumbnails in a layout other than the one of n shards
//	              (cover.cache.shard_count changed to n), but only those
//	              whose file already has a ready cover in the n-shard
//	              layout, whose file is gone, or that failed: the old
//	              cover stays servable until the new one is rendered, and
//	              the key can be scheduled again after every re-render.
//
// A cleanup is claimable only while no pending/running thumbnail belongs to
// its group: thumbnails.group_key = key for library:<id>; thumbnails.file_id
// = <id> for file:<id>; any pending/running thumbnail for shards:<n>.

// Cleanup group kinds.
const (
	CleanupLibrary = "library"
	CleanupFile    = "file"
	CleanupShards  = "shards"
)

// CleanupKey is a parsed cleanup group_key.
type CleanupKey struct {
	Kind string
	N    int64
}

func (k CleanupKey) String() string { return k.Kind + ":" + strconv.FormatInt(k.N, 10) }

// ParseCleanupKey accepts library:<id>, file:<id> and shards:<n> with a
// positive decimal number without sign or leading zeros.
func ParseCleanupKey(key string) (CleanupKey, error) {
	kind, num, ok := strings.Cut(key, ":")
	if !ok || (kind != CleanupLibrary && kind != CleanupFile && kind != CleanupShards) {
		return CleanupKey{}, fmt.Errorf("cleanup group key %q: want library:<id>, file:<id> or shards:<n>", key)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != num {
		return CleanupKey{}, fmt.Errorf("cleanup group key %q: want a positive number after %q", key, kind+":")
	}
	return CleanupKey{Kind: kind, N: n}, nil
}

// EnqueueCleanup schedules a cleanup of groupKey at executeAfter. A pending
// row of the same key is returned instead of a duplicate.
func (s *Store) EnqueueCleanup(ctx context.Context, groupKey string, executeAfter time.Time) (model.CleanupJob, error) {
	if _, err := ParseCleanupKey(groupKey); err != nil {
		return model.CleanupJob{}, &protocol.Error{Code: protocol.ErrInvalidPayload, Message: err.Error(), Err: err}
	}
	var c model.CleanupJob
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &c, `SELECT * FROM thumbnail_cleanup_jobs WHERE group_key = ? AND status = 'pending'
			ORDER BY id LIMIT 1`, groupKey)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now := s.db.NowText()
		return tx.GetContext(ctx, &c, `INSERT INTO thumbnail_cleanup_jobs (group_key, status, execute_after, created_at, updated_at)
			VALUES (?, 'pending', ?, ?, ?) RETURNING *`, groupKey, protocol.FormatTime(executeAfter), now, now)
	})
	if err != nil {
		return model.CleanupJob{}, fmt.Errorf("enqueue cleanup %s: %w", groupKey, err)
	}
	return c, nil
}

// ScheduleMissingCleanups schedules a file:<id> cleanup, due now, for every
// file missing longer than missingFor that still has ready/failed
// thumbnails and no pending/running cleanup. It returns how many were
// scheduled.
func (s *Store) ScheduleMissingCleanups(ctx context.Context, missingFor time.Duration) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		now := s.db.Now()
		ts := protocol.FormatTime(now)
		res, err := tx.ExecContext(ctx, `INSERT INTO thumbnail_cleanup_jobs (group_key, status, execute_after, created_at, updated_at)
			SELECT 'file:' || f.id, 'pending', ?1, ?1, ?1 FROM library_files f
			WHERE f.is_missing = 1 AND f.missing_since IS NOT NULL AND f.missing_since <= ?2
			  AND EXISTS (SELECT 1 FROM thumbnails t WHERE t.file_id = f.id AND t.status IN ('ready','failed'))
			  AND NOT EXISTS (SELECT 1 FROM thumbnail_cleanup_jobs c WHERE c.group_key = 'file:' || f.id
				AND c.status IN ('pending','running'))
			ORDER BY f.id`, ts, protocol.FormatTime(now.Add(-missingFor)))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("schedule missing cleanups: %w", err)
	}
	return n, nil
}

// FlagStaleLayoutCovers sets needs_cover on every present file whose newest
// ready cover is not in the layout of shardCount shards, so that the next
// admissions re-render it there; then schedule shards:<shardCount>. It
// returns how many files were flagged.
func (s *Store) FlagStaleLayoutCovers(ctx context.Context, shardCount int64) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE library_files SET needs_cover = 1, updated_at = ?
			WHERE is_missing = 0 AND needs_cover = 0 AND EXISTS (SELECT 1 FROM thumbnails t
				WHERE t.id = (SELECT max(id) FROM thumbnails WHERE file_id = library_files.id AND status = 'ready')
				AND `+layoutMismatch+`)`, s.db.NowText(), shardPattern(shardCount), max(shardCount, 1))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("flag stale layout covers: %w", err)
	}
	return n, nil
}

// HasStaleLayoutCovers reports whether any finished thumbnail row is not in
// the layout of shardCount shards (cover.cache.shard_count changed).
func (s *Store) HasStaleLayoutCovers(ctx context.Context, shardCount int64) (bool, error) {
	var stale bool
	err := s.db.R.GetContext(ctx, &stale, `SELECT EXISTS (SELECT 1 FROM thumbnails t
		WHERE t.status IN ('ready','failed') AND `+layoutMismatch+`)`, shardPattern(shardCount), max(shardCount, 1))
	if err != nil {
		return false, fmt.Errorf("stale layout covers: %w", err)
	}
	return stale, nil
}

// layoutMismatch is the SQL condition "row t is not in the n-shard layout".
// Parameters: shard pattern, shard count.
const layoutMismatch = `t.output_relpath <> '` + CoversDir + `/' || printf(?, t.file_id % ?) || '/' || t.file_id
	|| '.' || CASE t.format WHEN 'jpeg' THEN 'jpg' ELSE 'webp' END`

// CleanupCandidates lists up to limit ready/failed thumbnails of the group
// with id > afterID, in id order (the executor's batches).
func (s *Store) CleanupCandidates(ctx context.Context, groupKey string, afterID int64, limit int) ([]model.Thumbnail, error) {
	k, err := ParseCleanupKey(groupKey)
	if err != nil {
		return nil, err
	}
	q := `SELECT t.* FROM thumbnails t WHERE t.status IN ('ready','failed') AND t.id > ? AND `
	args := []any{afterID}
	switch k.Kind {
	case CleanupLibrary:
		q += `t.group_key = ?`
		args = append(args, groupKey)
	case CleanupFile:
		q += `t.file_id = ?`
		args = append(args, k.N)
	case CleanupShards:
		q += layoutMismatch + ` AND (t.status = 'failed'
			OR NOT EXISTS (SELECT 1 FROM library_files f WHERE f.id = t.file_id)
			OR EXISTS (SELECT 1 FROM thumbnails c WHERE c.file_id = t.file_id AND c.format = t.format
				AND c.status = 'ready' AND c.output_relpath = '` + CoversDir + `/' || printf(?, t.file_id % ?) || '/'
				|| t.file_id || '.' || CASE t.format WHEN 'jpeg' THEN 'jpg' ELSE 'webp' END))`
		args = append(args, shardPattern(k.N), k.N, shardPattern(k.N), k.N)
	}
	q += ` ORDER BY t.id LIMIT ?`
	var out []model.Thumbnail
	if err := s.db.R.SelectContext(ctx, &out, q, append(args, limit)...); err != nil {
		return nil, fmt.Errorf("cleanup candidates of %s: %w", groupKey, err)
	}
	return out, nil
}

// CoverPathsInUse returns which of the given output paths are referenced by
// a pending, running or ready thumbnail other than the rows in ids (which
// are about to be deleted): the executor keeps those cache files.
func (s *Store) CoverPathsInUse(ctx context.Context, paths []string, ids []int64) (map[string]bool, error) {
	out := map[string]bool{}
	if len(paths) == 0 {
		return out, nil
	}
	q, args, err := sqlx.In(`SELECT DISTINCT output_relpath FROM thumbnails
		WHERE output_relpath IN (?) AND id NOT IN (?) AND status IN ('pending','running','ready')`, paths, orNone(ids))
	if err != nil {
		return nil, err
	}
	var used []string
	if err := s.db.R.SelectContext(ctx, &used, q, args...); err != nil {
		return nil, fmt.Errorf("cover paths in use: %w", err)
	}
	for _, p := range used {
		out[p] = true
	}
	return out, nil
}

// DeleteCleanedThumbnails deletes the given rows that are still ready or
// failed (a row requeued meanwhile is kept) and returns how many went. The
// delete is fenced by the cleanup's claim c: a cleaner that lost its lease
// deletes nothing (sqldb.ErrLeaseLost).
func (s *Store) DeleteCleanedThumbnails(ctx context.Context, c model.Fence, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	q, args, err := sqlx.In(`DELETE FROM thumbnails WHERE id IN (?) AND status IN ('ready','failed')`, ids)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.db.Fenced(ctx, c, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete cleaned thumbnails: %w", err)
	}
	return n, nil
}

func orNone(ids []int64) []int64 {
	if len(ids) == 0 {
		return []int64{0}
	}
	return ids
}
