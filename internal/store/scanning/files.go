package scanning

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/natsort"
	"github.com/bindery-nas/bindery/protocol"
)

// FileStat is what discovery learns about one file on disk.
type FileStat struct {
	// RelativePath ends in '/' for a folder book.
	RelativePath string
	// SizeBytes and MtimeNS of a folder book are the sum of its pages'
	// sizes and the newest mtime of the folder, its pages and its
	// ComicInfo.xml, so that a change to any page changes the book.
	SizeBytes int64
	MtimeNS   int64
	Inode     int64
	Device    int64
	// Role is what the walk found the path to be; zero means a book.
	Role protocol.FileRole
	// Volumes counts the volumes of a multi-volume RAR book, whose
	// SizeBytes and MtimeNS are then the sum and the newest of theirs;
	// zero for every other file.
	Volumes int
}

// volumes is the volumes column: NULL unless the book has several.
func (f FileStat) volumes() sql.NullInt64 {
	return sql.NullInt64{Int64: int64(f.Volumes), Valid: f.Volumes >= 2}
}

// role is the row's role, books by default.
func (f FileStat) role() protocol.FileRole {
	if f.Role == "" {
		return protocol.RoleBook
	}
	return f.Role
}

// FileSig is the stored quick signature of a file row, the DB side of the
// discovery comparison.
type FileSig struct {
	ID           int64             `db:"id"`
	RelativePath string            `db:"relative_path"`
	SizeBytes    int64             `db:"size_bytes"`
	MtimeNS      int64             `db:"mtime_ns"`
	IsMissing    bool              `db:"is_missing"`
	Role         protocol.FileRole `db:"role"`
	// RetryAnalysis: the last analysis failed with io_error, a condition
	// that may have passed, so the file is analysed again even unchanged.
	RetryAnalysis bool `db:"retry_analysis"`
}

// FileSigsAfter returns up to limit signatures of a library whose
// relative_path sorts after the given one, in relative_path (BINARY) order:
// one page of a keyset scan over the unique (library_id, relative_path)
// index. Discovery merges these pages with its sorted walk, so neither side
// is ever held in memory whole.
func (s *Store) FileSigsAfter(ctx context.Context, libraryID int64, after string, limit int) ([]FileSig, error) {
	return s.FileSigsUnder(ctx, libraryID, "", after, limit)
}

// FileSigsUnder is FileSigsAfter limited to the rows under folder (a
// '/'-ending relative path; "" is the whole library): a folder-scoped
// scan's side of the merge. Rows under a folder are one range of the
// index, [folder, folder with its final '/' raised to '0').
func (s *Store) FileSigsUnder(ctx context.Context, libraryID int64, folder, after string, limit int) ([]FileSig, error) {
	below := ""
	if folder != "" {
		below = strings.TrimSuffix(folder, "/") + "0"
	}
	out := make([]FileSig, 0, limit)
	rows, err := s.db.R.QueryContext(ctx, `SELECT id, relative_path, size_bytes, mtime_ns, is_missing, role,
			CASE WHEN analysis_error_code = ? THEN 1 ELSE 0 END
		FROM library_files WHERE library_id = ? AND relative_path > ? AND relative_path >= ?
			AND (? = '' OR relative_path < ?) ORDER BY relative_path LIMIT ?`,
		protocol.ErrIOError, libraryID, after, folder, below, below, limit)
	if err != nil {
		return nil, fmt.Errorf("file signatures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f FileSig
		if err := rows.Scan(&f.ID, &f.RelativePath, &f.SizeBytes, &f.MtimeNS, &f.IsMissing, &f.Role, &f.RetryAnalysis); err != nil {
			return nil, fmt.Errorf("file signatures: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("file signatures: %w", err)
	}
	return out, nil
}

// FileUpdate is a known row whose file changed size or mtime or role, or
// that was missing and is back. A row whose role changes is analysed
// again; one that stops being a book leaves its series.
type FileUpdate struct {
	ID int64
	FileStat
	// SigChanged: size or mtime differ, so the file is analysed and hashed
	// again. False for a restored row whose file is the same.
	SigChanged bool
}

// DiscoveryBatch is one transaction of discovery writes.
type DiscoveryBatch struct {
	SessionID int64
	LibraryID int64
	// MissingSince is the timestamp written on rows that went missing; the
	// scanner passes its session's started_at.
	MissingSince protocol.Time
	Insert       []FileStat
	Update       []FileUpdate
	// Reanalyze are unchanged rows re-analysed because the scan is forced.
	Reanalyze []int64
	// Missing are rows not seen by this scan.
	Missing []int64
	Errors  []model.ScanError
	// Counts are the session's running totals, written in the same
	// transaction.
	Counts model.ScanCounts
}

// Empty reports whether the batch writes no file row.
func (b *DiscoveryBatch) Empty() bool {
	return len(b.Insert)+len(b.Update)+len(b.Reanalyze)+len(b.Missing)+len(b.Errors) == 0
}

// Len is the number of file rows the batch writes.
func (b *DiscoveryBatch) Len() int {
	return len(b.Insert) + len(b.Update) + len(b.Reanalyze) + len(b.Missing)
}

// ApplyDiscovery writes one batch in one transaction. Every statement is
// idempotent (inserts skip existing paths, missing marks skip rows already
// missing), so a batch replayed after a kill changes nothing twice.
func (s *Store) ApplyDiscovery(ctx context.Context, f model.Fence, b *DiscoveryBatch) error {
	now := s.db.NowText()
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		if err := insertFiles(ctx, tx, b, now); err != nil {
			return err
		}
		if err := updateFiles(ctx, tx, b, now); err != nil {
			return err
		}
		if err := execEach(ctx, tx, `UPDATE library_files SET needs_analysis = 1, updated_at = ?1
				WHERE id = ?2 AND needs_analysis = 0`, now, b.Reanalyze); err != nil {
			return err
		}
		if err := execEach(ctx, tx, `UPDATE library_files SET is_missing = 1, missing_since = ?1, updated_at = ?1
				WHERE id = ?2 AND is_missing = 0`, b.MissingSince.String(), b.Missing); err != nil {
			return err
		}
		if err := insertScanErrors(ctx, tx, b.SessionID, b.Errors, now); err != nil {
			return err
		}
		return writeScanCounts(ctx, tx, b.SessionID, b.Counts)
	})
	if err != nil {
		return fmt.Errorf("apply discovery: %w", err)
	}
	return nil
}

func insertFiles(ctx context.Context, tx *sqlx.Tx, b *DiscoveryBatch, now string) error {
	if len(b.Insert) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
			inode, device, last_seen_scan_id, needs_analysis, needs_hash, needs_cover, sort_key, role, path_key, volumes, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, CASE WHEN ?8 <> 'folder' THEN 1 ELSE 0 END, 0, ?9, ?8, ?11, ?12, ?10, ?10) ON CONFLICT (library_id, relative_path) DO NOTHING`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, f := range b.Insert {
		if _, err := stmt.ExecContext(ctx, b.LibraryID, f.RelativePath, f.SizeBytes, f.MtimeNS,
			f.Inode, f.Device, b.SessionID, f.role(), natsort.BookKey("", 0, false, f.RelativePath), now,
			natsort.Key(f.RelativePath), f.volumes()); err != nil {
			return fmt.Errorf("insert %s: %w", f.RelativePath, err)
		}
	}
	return nil
}

func updateFiles(ctx context.Context, tx *sqlx.Tx, b *DiscoveryBatch, now string) error {
	if len(b.Update) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `UPDATE library_files SET size_bytes = ?1, mtime_ns = ?2, inode = ?3, device = ?4,
			needs_analysis = CASE WHEN ?5 = 1 OR role <> ?9 THEN 1 ELSE needs_analysis END,
			needs_hash = CASE WHEN ?9 = 'folder' THEN 0 WHEN ?5 = 1 THEN 1 ELSE needs_hash END,
			series_id = CASE WHEN ?9 IN ('book', 'folder') THEN series_id END, role = ?9, volumes = ?10,
			is_missing = 0, missing_since = NULL, last_seen_scan_id = ?6, updated_at = ?7 WHERE id = ?8`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, f := range b.Update {
		if _, err := stmt.ExecContext(ctx, f.SizeBytes, f.MtimeNS, f.Inode, f.Device, f.SigChanged,
			b.SessionID, now, f.ID, f.role(), f.volumes()); err != nil {
			return fmt.Errorf("update %s: %w", f.RelativePath, err)
		}
	}
	return nil
}

// execEach runs query once per id with the arguments (arg, id).
func execEach(ctx context.Context, tx *sqlx.Tx, query, arg string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, id := range ids {
		if _, err := stmt.ExecContext(ctx, arg, id); err != nil {
			return fmt.Errorf("file %d: %w", id, err)
		}
	}
	return nil
}

// FileTarget is a file row some phase works on.
type FileTarget struct {
	ID           int64             `db:"id"`
	RelativePath string            `db:"relative_path"`
	SizeBytes    int64             `db:"size_bytes"`
	MtimeNS      int64             `db:"mtime_ns"`
	Role         protocol.FileRole `db:"role"`
}

const targetCols = `id, relative_path, size_bytes, mtime_ns, role`

// FilesToAnalyze returns up to limit present rows of a library that need
// analysis, with id > afterID, in id order.
func (s *Store) FilesToAnalyze(ctx context.Context, libraryID, afterID int64, limit int) ([]FileTarget, error) {
	var out []FileTarget
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+targetCols+` FROM library_files
		WHERE library_id = ? AND needs_analysis = 1 AND is_missing = 0 AND id > ? ORDER BY id LIMIT ?`,
		libraryID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("files to analyze: %w", err)
	}
	return out, nil
}

// CountToAnalyze counts the present rows of a library that need analysis.
func (s *Store) CountToAnalyze(ctx context.Context, libraryID int64) (int64, error) {
	var n int64
	err := s.db.R.QueryRowContext(ctx, `SELECT count(*) FROM library_files
		WHERE library_id = ? AND needs_analysis = 1 AND is_missing = 0`, libraryID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count to analyze: %w", err)
	}
	return n, nil
}

// CountPresentFiles counts a library's rows that are not missing (the
// expected size of the next walk).
func (s *Store) CountPresentFiles(ctx context.Context, libraryID int64) (int64, error) {
	var n int64
	err := s.db.R.QueryRowContext(ctx, `SELECT count(*) FROM library_files WHERE library_id = ? AND is_missing = 0`,
		libraryID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count files: %w", err)
	}
	return n, nil
}

// MarkCoversMissing sets needs_cover on up to limit present, analysed rows
// of a library that have pages but no cover yet (cover_updated_at IS NULL)
// and returns how many it marked; callers loop until it returns less than
// limit.
func (s *Store) MarkCoversMissing(ctx context.Context, f model.Fence, libraryID int64, limit int) (int64, error) {
	now := s.db.NowText()
	var n int64
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE library_files SET needs_cover = 1, updated_at = ?
			WHERE id IN (SELECT id FROM library_files WHERE library_id = ? AND is_missing = 0 AND needs_cover = 0
				AND needs_analysis = 0 AND cover_updated_at IS NULL AND total_pages > 0 AND role <> 'page' LIMIT ?)`, now, libraryID, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark covers missing: %w", err)
	}
	return n, nil
}

// CoveredFile is a file that has had a cover, with the cache path of its
// newest ready cover (NULL when no ready row is left).
type CoveredFile struct {
	FileID        int64          `db:"id"`
	OutputRelPath sql.NullString `db:"output_relpath"`
}

// CoveredFiles returns up to limit present files of a library with id >
// afterID that have a cover version and no pending cover request, in id
// order, so that a scan can check their cache files still exist.
func (s *Store) CoveredFiles(ctx context.Context, libraryID, afterID int64, limit int) ([]CoveredFile, error) {
	var out []CoveredFile
	err := s.db.R.SelectContext(ctx, &out, `SELECT f.id,
			(SELECT t.output_relpath FROM thumbnails t WHERE t.file_id = f.id AND t.status = 'ready'
			 ORDER BY t.id DESC LIMIT 1) AS output_relpath
		FROM library_files f
		WHERE f.library_id = ? AND f.id > ? AND f.is_missing = 0 AND f.needs_cover = 0
		  AND f.cover_updated_at IS NOT NULL
		ORDER BY f.id LIMIT ?`, libraryID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("covered files: %w", err)
	}
	return out, nil
}

// MarkNeedsCover sets needs_cover on the given files.
func (s *Store) MarkNeedsCover(ctx context.Context, f model.Fence, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	now := s.db.NowText()
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE library_files SET needs_cover = 1, updated_at = ? WHERE id = ?`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, id := range ids {
			if _, err := stmt.ExecContext(ctx, now, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark needs cover: %w", err)
	}
	return nil
}

// MoveCandidate is a row that may be a moved file.
type MoveCandidate struct {
	FileTarget
	// LastSeenScanID is the session that inserted the row.
	LastSeenScanID sql.NullInt64 `db:"last_seen_scan_id"`
	// Volumes counts the volumes of a multi-volume RAR book (0 for any
	// other file): a move of the set is recognised by the digest of them
	// all.
	Volumes int `db:"volumes"`
}

// MoveCandidates returns up to limit rows of a library, id > afterID, that
// may be a moved file: present, never analysed (a row discovery inserted),
// and the same size as some missing row of the library.
func (s *Store) MoveCandidates(ctx context.Context, libraryID, afterID int64, limit int) ([]MoveCandidate, error) {
	var out []MoveCandidate
	err := s.db.R.SelectContext(ctx, &out, `SELECT f.id, f.relative_path, f.size_bytes, f.mtime_ns, f.role, f.last_seen_scan_id, COALESCE(f.volumes, 0) AS volumes
		FROM library_files f
		WHERE f.library_id = ?1 AND f.needs_analysis = 1 AND f.id > ?2 AND f.is_missing = 0 AND f.analyzed_at IS NULL
		  AND f.role <> 'folder' AND EXISTS (SELECT 1 FROM library_files m
			WHERE m.library_id = ?1 AND m.is_missing = 1 AND m.size_bytes = f.size_bytes AND m.role <> 'folder')
		ORDER BY f.id LIMIT ?3`, libraryID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("move candidates: %w", err)
	}
	return out, nil
}

// MissingMatch is a missing row whose content matches a new file.
type MissingMatch struct {
	ID           int64             `db:"id"`
	MissingSince protocol.NullTime `db:"missing_since"`
}

// MissingWithHash returns (at most two: callers only need to know "exactly
// one") the missing rows of a library with that size whose stored content
// hash, still valid for their signature, equals sum.
func (s *Store) MissingWithHash(ctx context.Context, libraryID, size int64, alg string, sum []byte) ([]MissingMatch, error) {
	var out []MissingMatch
	err := s.db.R.SelectContext(ctx, &out, `SELECT id, missing_since FROM library_files
		WHERE library_id = ? AND is_missing = 1 AND size_bytes = ? AND hash_algorithm = ? AND content_hash = ?
		  AND hashed_size_bytes = size_bytes AND hashed_mtime_ns = mtime_ns ORDER BY id LIMIT 2`,
		libraryID, size, alg, sum)
	if err != nil {
		return nil, fmt.Errorf("missing with hash: %w", err)
	}
	return out, nil
}

// FileHash is a content hash computed for a file of a known signature.
type FileHash struct {
	Algorithm string
	Sum       []byte
	SizeBytes int64
	MtimeNS   int64
}

// RecordHash stores a hash computed by the scanner, only while the row's
// signature is still the one that was hashed.
func (s *Store) RecordHash(ctx context.Context, f model.Fence, id int64, h FileHash) error {
	now := s.db.NowText()
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE library_files SET hash_algorithm = ?, content_hash = ?,
				hashed_size_bytes = ?, hashed_mtime_ns = ?, hashed_at = ?, needs_hash = 0, updated_at = ?
			WHERE id = ? AND size_bytes = ? AND mtime_ns = ?`,
			h.Algorithm, h.Sum, h.SizeBytes, h.MtimeNS, now, now, id, h.SizeBytes, h.MtimeNS)
		return err
	})
	if err != nil {
		return fmt.Errorf("record hash: %w", err)
	}
	return nil
}

// Move reuses a missing row for a file found at a new path.
type Move struct {
	SessionID int64
	// NewID is the row discovery inserted for the new path; it is deleted.
	NewID int64
	// OldID is the missing row that takes the new path, keeping its id,
	// series link, metadata and cover.
	OldID int64
	Stat  FileStat
	Hash  FileHash
	// Counts are the session's running totals after the move.
	Counts model.ScanCounts
}

// ApplyMove performs a move in one transaction, after checking that both
// rows are still what the scanner saw (the new row never analysed, the old
// one missing). It reports false, changing nothing, when they are not.
func (s *Store) ApplyMove(ctx context.Context, f model.Fence, m Move) (bool, error) {
	now := s.db.NowText()
	applied := false
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		applied = false
		res, err := tx.ExecContext(ctx, `DELETE FROM library_files WHERE id = ? AND analyzed_at IS NULL
			AND is_missing = 0 AND relative_path = ?`, m.NewID, m.Stat.RelativePath)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		key, err := movedSortKey(ctx, tx, m.OldID, m.Stat.RelativePath)
		if err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `UPDATE library_files SET relative_path = ?, sort_key = ?, path_key = ?, size_bytes = ?, mtime_ns = ?,
				inode = ?, device = ?, role = ?, volumes = ?, is_missing = 0, missing_since = NULL, last_seen_scan_id = ?,
				hash_algorithm = ?, content_hash = ?, hashed_size_bytes = ?, hashed_mtime_ns = ?, hashed_at = ?,
				needs_hash = 0, needs_analysis = 1, updated_at = ?
			WHERE id = ? AND is_missing = 1`, m.Stat.RelativePath, key, natsort.Key(m.Stat.RelativePath), m.Stat.SizeBytes, m.Stat.MtimeNS,
			m.Stat.Inode, m.Stat.Device, m.Stat.role(), m.Stat.volumes(), m.SessionID, m.Hash.Algorithm, m.Hash.Sum, m.Stat.SizeBytes,
			m.Stat.MtimeNS, now, now, m.OldID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errMoveRace
		}
		applied = true
		return writeScanCounts(ctx, tx, m.SessionID, m.Counts)
	})
	if errors.Is(err, errMoveRace) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("apply move: %w", err)
	}
	return applied, nil
}

// movedSortKey is the sort key of file id at its new path, with the
// number and volume its metadata already has.
func movedSortKey(ctx context.Context, tx *sqlx.Tx, id int64, rel string) (string, error) {
	var number sql.NullString
	var volume sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT number, volume FROM file_metadata WHERE file_id = ?`, id).Scan(&number, &volume)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	return natsort.BookKey(number.String, volume.Int64, volume.Valid, rel), nil
}

// errMoveRace rolls a move back when the old row stopped being missing.
var errMoveRace = errors.New("move: old row is no longer missing")

// PurgeMissing deletes up to limit rows of the library's files missing
// since before cutoff, with their metadata, and returns how many. A row
// that still has thumbnail rows waits: its covers are deleted by a cleanup
// job first (cleanup.missing_after_hours), so that no cover file outlives
// the row that names it.
func (s *Store) PurgeMissing(ctx context.Context, f model.Fence, libraryID int64, cutoff time.Time, limit int) (int64, error) {
	var n int64
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM library_files WHERE id IN (SELECT f.id FROM library_files f
			WHERE f.library_id = ? AND f.is_missing = 1 AND f.missing_since < ?
			AND NOT EXISTS (SELECT 1 FROM thumbnails t WHERE t.file_id = f.id) ORDER BY f.id LIMIT ?)`,
			libraryID, protocol.FormatTime(cutoff), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge missing: %w", err)
	}
	return n, nil
}

// PresentWithSize lists the present, non-folder rows of a library with
// that size other than exceptID: where a file found at a new path may have
// come from (a scoped scan checks whether their files are gone).
func (s *Store) PresentWithSize(ctx context.Context, libraryID, size, exceptID int64) ([]FileSig, error) {
	var out []FileSig
	err := s.db.R.SelectContext(ctx, &out, `SELECT id, relative_path, size_bytes, mtime_ns, is_missing, role, 0 AS retry_analysis
		FROM library_files
		WHERE library_id = ? AND size_bytes = ? AND id <> ? AND is_missing = 0 AND role <> 'folder' ORDER BY id LIMIT 16`,
		libraryID, size, exceptID)
	if err != nil {
		return nil, fmt.Errorf("present with size: %w", err)
	}
	return out, nil
}

// NewRows lists up to limit rows of a library, id > afterID, that
// discovery inserted and nothing analysed yet (present, never analysed,
// not folders).
func (s *Store) NewRows(ctx context.Context, libraryID, afterID int64, limit int) ([]MoveCandidate, error) {
	var out []MoveCandidate
	err := s.db.R.SelectContext(ctx, &out, `SELECT f.id, f.relative_path, f.size_bytes, f.mtime_ns, f.role, f.last_seen_scan_id, COALESCE(f.volumes, 0) AS volumes
		FROM library_files f
		WHERE f.library_id = ? AND f.needs_analysis = 1 AND f.id > ? AND f.is_missing = 0 AND f.analyzed_at IS NULL
		  AND f.role <> 'folder' ORDER BY f.id LIMIT ?`, libraryID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("new rows: %w", err)
	}
	return out, nil
}
