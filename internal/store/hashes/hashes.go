package hashes

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// HashLibrary is a library a hash job walks: its id and registered path.
type HashLibrary struct {
	ID   int64  `db:"id"`
	Path string `db:"path"`
}

// HashLibraries returns the library libraryID, or every library when it is
// NULL (a hash job without library_id covers all libraries). A missing
// library yields an empty list, not an error: it was deleted after the job
// was queued and there is nothing left to hash.
func (s *Store) HashLibraries(ctx context.Context, libraryID *int64) ([]HashLibrary, error) {
	var out []HashLibrary
	err := s.db.R.SelectContext(ctx, &out, `SELECT id, path FROM libraries
		WHERE id = ?1 OR ?1 IS NULL ORDER BY id`, libraryID)
	if err != nil {
		return nil, fmt.Errorf("hash libraries: %w", err)
	}
	return out, nil
}

// HashCandidate is a file the hash job must (re)hash, with the size and
// mtime the scanner recorded; the result is stored only if they still hold.
type HashCandidate struct {
	ID           int64  `db:"id"`
	LibraryID    int64  `db:"library_id"`
	RelativePath string `db:"relative_path"`
	SizeBytes    int64  `db:"size_bytes"`
	MtimeNS      int64  `db:"mtime_ns"`
	// Volumes counts the volumes of a multi-volume RAR book (0 for any
	// other file): its digest covers them all, in order.
	Volumes int64 `db:"volumes"`
}

// hashDue selects the live files f of library ?1 (all when NULL) that need
// a hash (a folder book never does: its pages are hashed): flagged by the scanner, or hashed with an algorithm other than ?2
// (lazy rehash), and not waiting out an error backoff (retry after ?3).
const hashDue = `f.is_missing = 0 AND f.role <> 'folder'
	AND (f.needs_hash = 1 OR f.hash_algorithm IS DISTINCT FROM ?2)
	AND (f.hash_retry_after IS NULL OR f.hash_retry_after <= ?3)
	AND (f.library_id = ?1 OR ?1 IS NULL)`

// hashDueOuter is hashDue of the row o that PartialTargets walks.
const hashDueOuter = `o.is_missing = 0 AND o.role <> 'folder'
	AND (o.needs_hash = 1 OR o.hash_algorithm IS DISTINCT FROM ?2)
	AND (o.hash_retry_after IS NULL OR o.hash_retry_after <= ?3)
	AND (o.library_id = ?1 OR ?1 IS NULL)`

// HashPass names the files one pass of a hash job reads whole.
type HashPass int

const (
	// PassCandidates is the due files that may be duplicates (hashCandidate).
	PassCandidates HashPass = iota
	// PassBackfill is every due file: after the candidate pass, the files
	// no other present file can equal.
	PassBackfill
)

func (p HashPass) where() string {
	if p == PassCandidates {
		return hashDue + ` AND ` + hashCandidate
	}
	return hashDue
}

// HashCandidates returns up to limit files due for hashing with alg in
// pass p, in id order after afterID. Keyset paging on the rowid means a job
// killed mid-way resumes from its last committed id and a pass is one walk
// over the table, whatever the mix of due and done files (or a walk of the
// due files alone, when they are few: fewDue).
func (s *Store) HashCandidates(ctx context.Context, p HashPass, libraryID *int64, alg protocol.HashAlgorithm, afterID int64, limit int) ([]HashCandidate, error) {
	few, err := s.fewDue(ctx, alg)
	if err != nil {
		return nil, fmt.Errorf("hash candidates: %w", err)
	}
	where := `f.id > ?4 AND `
	if few {
		where += `f.id IN (SELECT p.id FROM (` + s.hashPending("?2") + `) p) AND `
	}
	var out []HashCandidate
	err = s.db.R.SelectContext(ctx, &out, `SELECT f.id, f.library_id, f.relative_path, f.size_bytes, f.mtime_ns, COALESCE(f.volumes, 0) AS volumes
		FROM library_files f WHERE `+where+p.where()+` ORDER BY f.id LIMIT ?5`,
		libraryID, string(alg), s.db.NowText(), afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("hash candidates: %w", err)
	}
	return out, nil
}

// CountHashCandidates counts the files due for hashing with alg (both
// passes), for the job's total_items, through indexes (hashPending): a job
// over a hashed library of 100,000 files counted them in 300 ms by a scan.
func (s *Store) CountHashCandidates(ctx context.Context, libraryID *int64, alg protocol.HashAlgorithm) (int64, error) {
	var n int64
	err := s.db.R.GetContext(ctx, &n, `SELECT count(*) FROM (`+s.hashPending("?2")+`) f
		WHERE (f.hash_retry_after IS NULL OR f.hash_retry_after <= ?3) AND (f.library_id = ?1 OR ?1 IS NULL)`,
		libraryID, string(alg), s.db.NowText())
	if err != nil {
		return 0, fmt.Errorf("count hash candidates: %w", err)
	}
	return n, nil
}

// HashResult is a digest computed from a file whose size and mtime were
// SizeBytes and MtimeNS both before and after it was read.
type HashResult struct {
	ID        int64
	Algorithm protocol.HashAlgorithm
	Sum       []byte
	SizeBytes int64
	MtimeNS   int64
}

// HashFailure is a file that could not be read; Backoff is how long the
// hash job leaves it alone.
type HashFailure struct {
	ID      int64
	Message string
	// Backoff returns the delay before the next attempt given the file's
	// new error count (1 after the first failure).
	Backoff func(errorCount int64) time.Duration
}

// RecordHashes stores a batch of results and failures in one transaction and
// returns how many results were stored. A result is stored only while the
// row still describes the file that was read (same size_bytes and mtime_ns,
// not missing): if the scanner saw a change in the meantime the row keeps
// needs_hash = 1 and the digest is dropped.
func (s *Store) RecordHashes(ctx context.Context, f model.Fence, results []HashResult, failures []HashFailure) (stored int64, err error) {
	if len(results) == 0 && len(failures) == 0 {
		return 0, nil
	}
	// In digest order, each index keyed by the digest is walked from left
	// to right instead of at random: 20% faster for 100,000 first hashes.
	results = slices.Clone(results)
	slices.SortFunc(results, func(a, b HashResult) int { return bytes.Compare(a.Sum, b.Sum) })
	err = s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		stored = 0
		now := s.db.NowText()
		for _, r := range results {
			n, err := recordHash(ctx, tx, r, now)
			if err != nil {
				return err
			}
			stored += n
		}
		for _, f := range failures {
			if err := recordHashFailure(ctx, tx, f, s.db.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record hashes: %w", err)
	}
	return stored, nil
}

func recordHash(ctx context.Context, tx *sqlx.Tx, r HashResult, now string) (int64, error) {
	if len(r.Sum) != 32 {
		return 0, fmt.Errorf("file %d: digest of %d bytes, want 32", r.ID, len(r.Sum))
	}
	res, err := tx.ExecContext(ctx, `UPDATE library_files SET
		hash_algorithm = ?, content_hash = ?, hashed_size_bytes = ?, hashed_mtime_ns = ?,
		hashed_at = ?, needs_hash = 0, hash_error_count = 0, hash_last_error = NULL,
		hash_last_error_at = NULL, hash_retry_after = NULL, updated_at = ?
		WHERE id = ? AND size_bytes = ? AND mtime_ns = ? AND is_missing = 0`,
		string(r.Algorithm), r.Sum, r.SizeBytes, r.MtimeNS, now, now, r.ID, r.SizeBytes, r.MtimeNS)
	if err != nil {
		return 0, fmt.Errorf("file %d: %w", r.ID, err)
	}
	return res.RowsAffected()
}

func recordHashFailure(ctx context.Context, tx *sqlx.Tx, f HashFailure, now time.Time) error {
	var count int64
	err := tx.GetContext(ctx, &count, `SELECT hash_error_count FROM library_files WHERE id = ?`, f.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // deleted meanwhile: nothing to record
	}
	if err != nil {
		return fmt.Errorf("file %d: %w", f.ID, err)
	}
	count++
	retry := now.Add(f.Backoff(count))
	_, err = tx.ExecContext(ctx, `UPDATE library_files SET hash_error_count = ?, hash_last_error = ?,
		hash_last_error_at = ?, hash_retry_after = ?, updated_at = ? WHERE id = ?`,
		count, f.Message, protocol.FormatTime(now), protocol.FormatTime(retry), protocol.FormatTime(now), f.ID)
	if err != nil {
		return fmt.Errorf("file %d: %w", f.ID, err)
	}
	return nil
}

// HashState is the hash bookkeeping of one library_files row.
type HashState struct {
	NeedsHash       bool              `db:"needs_hash"`
	HashAlgorithm   sql.NullString    `db:"hash_algorithm"`
	ContentHash     []byte            `db:"content_hash"`
	HashedSizeBytes sql.NullInt64     `db:"hashed_size_bytes"`
	HashedMtimeNS   sql.NullInt64     `db:"hashed_mtime_ns"`
	HashedAt        protocol.NullTime `db:"hashed_at"`
	HashErrorCount  int64             `db:"hash_error_count"`
	HashLastError   sql.NullString    `db:"hash_last_error"`
	HashLastErrorAt protocol.NullTime `db:"hash_last_error_at"`
	HashRetryAfter  protocol.NullTime `db:"hash_retry_after"`
}

// HashState returns the hash columns of file id; sqldb.ErrNotFound when absent.
func (s *Store) HashState(ctx context.Context, id int64) (HashState, error) {
	var h HashState
	err := s.db.R.GetContext(ctx, &h, `SELECT needs_hash, hash_algorithm, content_hash, hashed_size_bytes,
		hashed_mtime_ns, hashed_at, hash_error_count, hash_last_error, hash_last_error_at, hash_retry_after
		FROM library_files WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return h, sqldb.MissingRow(sqldb.FileRow, id)
	}
	if err != nil {
		return h, fmt.Errorf("hash state: %w", err)
	}
	return h, nil
}
