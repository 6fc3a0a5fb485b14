package thumbnails

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// Thumbnail admission (controld, protocol §4.3) and the lookups of the
// cover renderer (workerd).
//
// Cache layout: every cover lives at <state>/covers/<shard>/<file_id>.<ext>
// with shard = file_id mod cover.cache.shard_count written in decimal,
// zero-padded to the digits of shard_count-1 (256 shards: "000".."255").
// output_relpath holds that path relative to the state dir, decided at
// admission, so that the renderer needs no setting to know where to write
// and a shard_count change leaves rows of the old layout recognizable.

// CoversDir is the folder under the state dir that holds the cover cache.
const CoversDir = "covers"

// ThumbnailGroupKey is the group_key of every thumbnail of a library.
func ThumbnailGroupKey(libraryID int64) string { return "library:" + strconv.FormatInt(libraryID, 10) }

// CoverRelPath is the cache path of a file's cover relative to the state
// dir, in the layout of shardCount shards.
func CoverRelPath(fileID, shardCount int64, format protocol.ImageFormat) string {
	return CoversDir + "/" + fmt.Sprintf(shardPattern(shardCount), fileID%max(shardCount, 1)) +
		"/" + strconv.FormatInt(fileID, 10) + "." + format.Ext()
}

// shardPattern is the printf pattern of a shard folder name; SQLite's
// printf reads it the same way (see relpathSQL).
func shardPattern(shardCount int64) string {
	return "%0" + strconv.Itoa(len(strconv.FormatInt(max(shardCount, 1)-1, 10))) + "d"
}

// relpathSQL computes CoverRelPath in SQL for the file id expression id:
// params are the shard pattern, the shard count and the extension.
func relpathSQL(id string) string {
	return `'` + CoversDir + `/' || printf(?, ` + id + ` % ?) || '/' || ` + id + ` || '.' || ?`
}

// mediaTypeSQL is protocol.FileFormat.MediaType of the file f: a video's
// cover is a frame ffmpeg decodes, anything else's an image page.
const mediaTypeSQL = `CASE f.format WHEN 'video' THEN 'video' ELSE 'image' END`

// admitOne is the conditional INSERT of protocol §4.3: one row for an
// existing, present file, unless the (file, format) already has a row in
// a dedup state, and only while pending+running stays under capacity. In
// one BEGIN IMMEDIATE transaction it is atomic under concurrent callers.
const admitOne = `INSERT INTO thumbnails (file_id, library_id, group_key, media_type, format, status,
		output_relpath, created_at, updated_at)
	SELECT f.id, f.library_id, 'library:' || f.library_id, ` + mediaTypeSQL + `, ?, 'pending', ?, ?, ?
	FROM library_files f
	WHERE f.id = ? AND f.is_missing = 0
	  AND NOT EXISTS (SELECT 1 FROM thumbnails t WHERE t.file_id = f.id AND t.format = ?
		AND (t.status IN ('pending','running') OR (? = 1 AND t.status = 'ready')))
	  AND (SELECT count(*) FROM thumbnails WHERE status IN ('pending','running')) < ?
	RETURNING *`

// AdmitThumbnail queues a cover render of one file. An existing
// pending/running/ready row of the same (file, format) is returned instead
// of a duplicate (created=false). sqldb.ErrNotFound: unknown or missing file.
// sqldb.ErrQueueFull: pending+running rows reached capacity.
func (s *Store) AdmitThumbnail(ctx context.Context, fileID int64, format protocol.ImageFormat, capacity, shardCount int64) (model.Thumbnail, bool, error) {
	return s.admitThumbnail(ctx, fileID, format, capacity, shardCount, false)
}

// RegenerateThumbnail queues a new render even when a ready cover exists
// (POST /files/{id}/cover/regenerate); a pending/running row is returned
// instead of a duplicate. Errors as AdmitThumbnail.
func (s *Store) RegenerateThumbnail(ctx context.Context, fileID int64, format protocol.ImageFormat, capacity, shardCount int64) (model.Thumbnail, bool, error) {
	return s.admitThumbnail(ctx, fileID, format, capacity, shardCount, true)
}

func (s *Store) admitThumbnail(ctx context.Context, fileID int64, format protocol.ImageFormat, capacity, shardCount int64, force bool) (model.Thumbnail, bool, error) {
	if _, err := protocol.ParseImageFormat(string(format)); err != nil {
		return model.Thumbnail{}, false, fmt.Errorf("admit thumbnail: %w", err)
	}
	var t model.Thumbnail
	var created bool
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		created = false
		now := s.db.NowText()
		if _, err := tx.ExecContext(ctx, `UPDATE thumbnails SET task = 'render', output_relpath = ?, updated_at = ?
			WHERE file_id = ? AND format = ? AND status = 'pending' AND task = 'hash'`,
			CoverRelPath(fileID, shardCount, format), now, fileID, format); err != nil {
			return err // a pending hash row becomes the render asked for (upgradeHashRows)
		}
		err := tx.GetContext(ctx, &t, admitOne, format, CoverRelPath(fileID, shardCount, format), now, now,
			fileID, format, !force, capacity)
		if err == nil {
			created = true
			return pruneSuperseded(ctx, tx, t)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return explainRefusal(ctx, tx, &t, fileID, format, force)
	})
	if err != nil {
		return model.Thumbnail{}, false, fmt.Errorf("admit thumbnail of file %d: %w", fileID, err)
	}
	return t, created, nil
}

// explainRefusal tells why admitOne inserted nothing, in the same
// transaction: an existing row to return, a missing file, or a full queue.
func explainRefusal(ctx context.Context, tx *sqlx.Tx, t *model.Thumbnail, fileID int64, format protocol.ImageFormat, force bool) error {
	statuses := `'pending','running','ready'`
	if force {
		statuses = `'pending','running'`
	}
	err := tx.GetContext(ctx, t, `SELECT * FROM thumbnails WHERE file_id = ? AND format = ? AND status IN (`+statuses+`)
		ORDER BY CASE WHEN status IN ('pending','running') THEN 0 ELSE 1 END, id DESC LIMIT 1`, fileID, format)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var present int
	if err := tx.GetContext(ctx, &present, `SELECT count(*) FROM library_files WHERE id = ? AND is_missing = 0`, fileID); err != nil {
		return err
	}
	if present == 0 {
		return sqldb.MissingRow(sqldb.FileRow, fileID)
	}
	return sqldb.ErrQueueFull
}

// pruneSuperseded deletes the older failed rows and every ready row but the
// newest of a (file, format) that just got a new pending row: the newest
// ready cover stays servable while the new one renders, and a file never
// accumulates rows. The cache file is shared by all rows of the file in the
// same layout, so no file is deleted here.
func pruneSuperseded(ctx context.Context, tx *sqlx.Tx, t model.Thumbnail) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM thumbnails WHERE file_id = ? AND format = ? AND id <> ?
		AND output_relpath = ?
		AND (status = 'failed' OR (status = 'ready' AND id < (SELECT max(id) FROM thumbnails
			WHERE file_id = ? AND format = ? AND status = 'ready')))`,
		t.FileID, t.Format, t.ID, t.OutputRelpath, t.FileID, t.Format)
	return err
}

// AdmitPendingCovers admits one batch of the library's files flagged
// needs_cover: at most limit rows, and no more than the free capacity
// (capacity − pending − running). A file flagged because it changed gets a
// new row even if it has a ready cover. needs_cover is cleared for the files
// admitted and for those whose pending row already exists (it reads the
// current content); a file with a running row keeps the flag and is
// admitted after that render ends. sqldb.ErrQueueFull when flagged files remain
// and there is no free capacity. Call it until it returns 0.
func (s *Store) AdmitPendingCovers(ctx context.Context, libraryID int64, limit int, capacity, shardCount int64, format protocol.ImageFormat) (int64, error) {
	if _, err := protocol.ParseImageFormat(string(format)); err != nil {
		return 0, fmt.Errorf("admit pending covers: %w", err)
	}
	var admitted int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		admitted = 0
		now := s.db.NowText()
		var active int64
		if err := tx.GetContext(ctx, &active, `SELECT count(*) FROM thumbnails WHERE status IN ('pending','running')`); err != nil {
			return err
		}
		if err := upgradeHashRows(ctx, tx, libraryID, shardCount, format, now); err != nil {
			return err
		}
		n := min(int64(limit), capacity-active)
		if n <= 0 {
			return queueFullIfFlagged(ctx, tx, libraryID)
		}
		rows, err := tx.QueryxContext(ctx, `INSERT INTO thumbnails (file_id, library_id, group_key, media_type, format,
				status, output_relpath, created_at, updated_at)
			SELECT f.id, f.library_id, 'library:' || f.library_id, `+mediaTypeSQL+`, ?, 'pending', `+relpathSQL("f.id")+`, ?, ?
			FROM library_files f
			WHERE f.library_id = ? AND f.needs_cover = 1 AND f.is_missing = 0
			  AND NOT EXISTS (SELECT 1 FROM thumbnails t WHERE t.file_id = f.id AND t.format = ?
				AND t.status IN ('pending','running'))
			ORDER BY f.id LIMIT ?
			RETURNING *`, format, shardPattern(shardCount), max(shardCount, 1), format.Ext(), now, now,
			libraryID, format, n)
		if err != nil {
			return err
		}
		var added []model.Thumbnail
		for rows.Next() {
			var t model.Thumbnail
			if err := rows.StructScan(&t); err != nil {
				rows.Close()
				return err
			}
			added = append(added, t)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, t := range added {
			if err := pruneSuperseded(ctx, tx, t); err != nil {
				return err
			}
		}
		admitted = int64(len(added))
		_, err = tx.ExecContext(ctx, `UPDATE library_files SET needs_cover = 0, updated_at = ?
			WHERE library_id = ? AND needs_cover = 1 AND EXISTS (SELECT 1 FROM thumbnails t
				WHERE t.file_id = library_files.id AND t.format = ? AND t.status = 'pending')`, now, libraryID, format)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("admit pending covers of library %d: %w", libraryID, err)
	}
	return admitted, nil
}

// upgradeHashRows turns the pending hash rows (AdmitCoverHashes) of the
// library's flagged files into renders in the current layout: the file
// changed, so hashing its cached cover would hash the old one, and the
// pending row already holds the (file, format)'s one active place. The
// flag is then cleared like that of any file with a pending render.
func upgradeHashRows(ctx context.Context, tx *sqlx.Tx, libraryID, shardCount int64, format protocol.ImageFormat, now string) error {
	_, err := tx.ExecContext(ctx, `UPDATE thumbnails SET task = 'render', output_relpath = `+relpathSQL("file_id")+`, updated_at = ?
		WHERE status = 'pending' AND task = 'hash' AND format = ? AND file_id IN (SELECT id FROM library_files
			WHERE library_id = ? AND needs_cover = 1 AND is_missing = 0)`,
		shardPattern(shardCount), max(shardCount, 1), format.Ext(), now, format, libraryID)
	return err
}

func queueFullIfFlagged(ctx context.Context, tx *sqlx.Tx, libraryID int64) error {
	var flagged bool
	err := tx.GetContext(ctx, &flagged, `SELECT EXISTS (SELECT 1 FROM library_files
		WHERE library_id = ? AND needs_cover = 1 AND is_missing = 0)`, libraryID)
	if err != nil {
		return err
	}
	if flagged {
		return sqldb.ErrQueueFull
	}
	return nil
}

// CoverSource is what the renderer needs to find a file's cover page.
type CoverSource struct {
	FileID         int64   `db:"file_id"`
	LibraryID      int64   `db:"library_id"`
	LibraryPath    string  `db:"library_path"`
	RelativePath   string  `db:"relative_path"`
	Format         *string `db:"format"`
	IsMissing      bool    `db:"is_missing"`
	FrontCoverPage *int64  `db:"front_cover_page"`
	CoverUpdatedAt *int64  `db:"cover_updated_at"`
	// DurationMS is a video's duration from its probe; nil when it has
	// none.
	DurationMS *int64 `db:"duration_ms"`
	// Volumes counts the volumes of a multi-volume RAR book, 0 otherwise.
	Volumes int64 `db:"volumes"`
}

// CoverSource looks up the file of a thumbnail row with its library root
// and the ComicInfo FrontCover page. sqldb.ErrNotFound when the file or its
// library no longer exists.
func (s *Store) CoverSource(ctx context.Context, fileID int64) (CoverSource, error) {
	var c CoverSource
	err := s.db.R.GetContext(ctx, &c, `SELECT f.id AS file_id, f.library_id, l.path AS library_path, f.relative_path,
			f.format, f.is_missing, m.front_cover_page, f.cover_updated_at, v.duration_ms, COALESCE(f.volumes, 0) AS volumes
		FROM library_files f JOIN libraries l ON l.id = f.library_id
		LEFT JOIN file_metadata m ON m.file_id = f.id
		LEFT JOIN video_probes v ON v.file_id = f.id
		WHERE f.id = ?`, fileID)
	if errors.Is(err, sql.ErrNoRows) {
		return CoverSource{}, sqldb.MissingRow(sqldb.FileRow, fileID)
	}
	if err != nil {
		return CoverSource{}, fmt.Errorf("cover source of file %d: %w", fileID, err)
	}
	return c, nil
}

// MarkCoverRendered gives the file a new cover version after a successful
// render: cover_updated_at = max(now in Unix seconds, previous + 1), so a
// re-render changes the ?v= of the cover URL even within the same second.
// It returns the new version; sqldb.ErrNotFound when the file row is gone. The
// write is fenced by the render's claim f (sqldb.ErrLeaseLost: nothing written).
func (s *Store) MarkCoverRendered(ctx context.Context, f model.Fence, fileID int64) (int64, error) {
	var v int64
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		now := s.db.Now()
		return tx.GetContext(ctx, &v, `UPDATE library_files
			SET cover_updated_at = CASE WHEN ?1 > coalesce(cover_updated_at, 0) + 1 THEN ?1
				ELSE coalesce(cover_updated_at, 0) + 1 END, updated_at = ?2
			WHERE id = ?3 RETURNING cover_updated_at`, now.Unix(), protocol.FormatTime(now), fileID)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, sqldb.MissingRow(sqldb.FileRow, fileID)
	}
	if err != nil {
		return 0, fmt.Errorf("mark cover rendered of file %d: %w", fileID, err)
	}
	return v, nil
}

// CoverVersionOf returns the cover_updated_at of a file (0 when unset).
func (s *Store) CoverVersionOf(ctx context.Context, fileID int64) (int64, error) {
	var v sql.NullInt64
	err := s.db.R.GetContext(ctx, &v, `SELECT cover_updated_at FROM library_files WHERE id = ?`, fileID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, sqldb.MissingRow(sqldb.FileRow, fileID)
	}
	if err != nil {
		return 0, fmt.Errorf("cover version of file %d: %w", fileID, err)
	}
	return v.Int64, nil
}
