package thumbnails

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Cover hashes (issue 38, item 5): every cover workerd renders is ready
// with its dHash (thumbnails.cover_hash, written by FinishThumbnail under
// the render's fence). Covers rendered before migration 29 have none;
// AdmitCoverHashes gives them one without rendering them again: it admits
// a row of task 'hash' per such cover, which workerd serves by hashing the
// cover file already cached at the same output_relpath (rendering it only
// when that file is gone or unreadable).

// admitHashes inserts the hash rows: for the newest row of a (file,
// format) when it is ready without a hash and its file is present. "The
// newest row of any status" keeps a cover whose hash row failed, or whose
// render is pending or running, from being admitted again: a new render
// of the file (which prunes the failed rows) gives it its hash.
const admitHashes = `INSERT INTO thumbnails (file_id, library_id, group_key, media_type, format, status, task,
		output_relpath, created_at, updated_at)
	SELECT t.file_id, t.library_id, t.group_key, t.media_type, t.format, 'pending', 'hash', t.output_relpath, ?, ?
	FROM thumbnails t JOIN library_files f ON f.id = t.file_id
	WHERE t.status = 'ready' AND t.cover_hash IS NULL AND f.is_missing = 0
	  AND NOT EXISTS (SELECT 1 FROM thumbnails n WHERE n.file_id = t.file_id AND n.format = t.format AND n.id > t.id)
	ORDER BY t.id LIMIT ?`

// AdmitCoverHashes admits at most limit hash rows for ready covers that
// have no hash, and no more than the free capacity (capacity − pending −
// running); it returns how many. Call it until it returns less than
// limit. It never returns sqldb.ErrQueueFull: the backfill waits behind renders.
func (s *Store) AdmitCoverHashes(ctx context.Context, limit int, capacity int64) (int64, error) {
	var admitted int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		admitted = 0
		var active int64
		if err := tx.GetContext(ctx, &active, `SELECT count(*) FROM thumbnails WHERE status IN ('pending','running')`); err != nil {
			return err
		}
		n := min(int64(limit), capacity-active)
		if n <= 0 {
			return nil
		}
		now := s.db.NowText()
		res, err := tx.ExecContext(ctx, admitHashes, now, now, n)
		if err != nil {
			return err
		}
		admitted, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("admit cover hashes: %w", err)
	}
	return admitted, nil
}
