package hashes

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// Candidate-first hashing (protocol §6.4). Two files can only have equal
// content when they have equal sizes and equal partial digests. So a hash
// job reads whole, first, only the due files for which some other present
// file passes both tests, or for which a test cannot be decided yet; once
// none is left, every duplicate group is complete, whatever is still due.
// The other due files are backfilled afterwards, for move detection and
// for the duplicates of files that arrive later.

// What a partial digest covers depends on the size, and is only ever
// compared between files of one size:
//   - up to NoPartialMax bytes: nothing; the file is read whole at once;
//   - up to 2 × PartialBlock: the first HeadBlock bytes (one page, as
//     jdupes does), so same-size small files cost a page each, not a file;
//   - larger: the first and the last PartialBlock bytes, which tell apart
//     files that share a format's fixed header, such as two cbz.
const (
	NoPartialMax = 8 << 10
	HeadBlock    = 4 << 10
	PartialBlock = 64 << 10
)

// hashCandidate holds for a file f that another present file o may equal:
// same size, and the partial digests, where f has one, do not tell them
// apart (unknown counts as equal). Each of its three tests is one seek of
// ix_library_files_size_partial (size, then partial digest): one test
// with an OR over o's digest walked every file of f's size, and a size
// shared by thousands of files made a pass quadratic.
const hashCandidate = `(EXISTS (SELECT 1 FROM library_files o
		WHERE o.size_bytes = f.size_bytes AND o.partial_hash = f.partial_hash AND o.is_missing = 0 AND o.id <> f.id)
	OR EXISTS (SELECT 1 FROM library_files o
		WHERE o.size_bytes = f.size_bytes AND o.partial_hash IS NULL AND o.is_missing = 0 AND o.id <> f.id)
	OR ((f.size_bytes <= 8192 OR f.partial_hash IS NULL) AND EXISTS (SELECT 1 FROM library_files o
		WHERE o.size_bytes = f.size_bytes AND o.is_missing = 0 AND o.id <> f.id)))`

// PartialTargets returns up to limit present files larger than
// NoPartialMax, in id order after afterID, whose partial digest is unknown
// and decides something: another present file has their size, and a file
// of that size (maybe they) is due for hashing with alg in the job's scope
// (library ?1, all when NULL). Files of other libraries are included:
// duplicate groups are global. The walk is on the rowid, so a job pages
// through the table once, and the size index answers both tests; when few
// files are due (fewDue), it is a walk of their sizes' files instead. A
// file that is itself due passes the second test without a probe (in a
// first hash job, nearly every file).
func (s *Store) PartialTargets(ctx context.Context, libraryID *int64, alg protocol.HashAlgorithm, afterID int64, limit int) ([]HashCandidate, error) {
	few, err := s.fewDue(ctx, alg)
	if err != nil {
		return nil, fmt.Errorf("partial targets: %w", err)
	}
	indexed, dueSizes := ``, ``
	if few {
		indexed = s.db.Pick(` INDEXED BY ix_library_files_size_partial`, ``)
		dueSizes = `o.size_bytes IN (SELECT p.size_bytes FROM (` + s.hashPending("?2") + `) p) AND `
	}
	var out []HashCandidate
	err = s.db.R.SelectContext(ctx, &out, `SELECT o.id, o.library_id, o.relative_path, o.size_bytes, o.mtime_ns, COALESCE(o.volumes, 0) AS volumes
		FROM library_files o`+indexed+` WHERE `+dueSizes+`o.id > ?4 AND o.is_missing = 0 AND o.role <> 'folder' AND o.partial_hash IS NULL AND o.size_bytes > 8192
		AND EXISTS (SELECT 1 FROM library_files p WHERE p.is_missing = 0 AND p.size_bytes = o.size_bytes AND p.id <> o.id)
		AND (`+hashDueOuter+` OR EXISTS (SELECT 1 FROM library_files f WHERE f.size_bytes = o.size_bytes AND `+hashDue+`))
		ORDER BY o.id LIMIT ?5`,
		libraryID, string(alg), s.db.NowText(), afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("partial targets: %w", err)
	}
	return out, nil
}

// fewDueMax is the most files not hashed with the job's algorithm for which
// a hash job's queries start from those files instead of walking the table
// (Store.fewDueMax, which tests lower to compare the two).
const fewDueMax = 4096

// fewDue reports whether at most fewDueMax present files are not hashed
// with alg, counting through indexes no further than that.
//
// A hash job pages through library_files in id order, so that a pass is
// one walk of the table however many files are due. When a few files were
// added to a hashed library, that walk is most of the job: 100,000 rows
// read to find 100. Those queries then start from the due files instead
// (hashPending), which return the same rows in the same order: every due
// file is among them. With many due files the walk stays, since each page
// would enumerate them all again.
func (s *Store) fewDue(ctx context.Context, alg protocol.HashAlgorithm) (bool, error) {
	var n int64
	err := s.db.R.GetContext(ctx, &n, `SELECT count(*) FROM (SELECT 1 FROM (`+s.hashPending("?1")+`) p LIMIT ?2) AS due`,
		string(alg), s.fewDueMax+1)
	return n <= int64(s.fewDueMax), err
}

// PartialResult is the partial digest of a file whose size and mtime were
// SizeBytes and MtimeNS before and after it was read.
type PartialResult struct {
	ID        int64
	Sum       []byte
	SizeBytes int64
	MtimeNS   int64
}

// RecordPartialHashes stores partial digests in one transaction, each only
// while the row still describes the version that was read; it returns how
// many were stored. A partial digest is bookkeeping, not a change of the
// file: updated_at is left alone.
func (s *Store) RecordPartialHashes(ctx context.Context, f model.Fence, results []PartialResult) (stored int64, err error) {
	if len(results) == 0 {
		return 0, nil
	}
	err = s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		stored = 0
		for _, r := range results {
			if len(r.Sum) != 32 {
				return fmt.Errorf("file %d: partial digest of %d bytes, want 32", r.ID, len(r.Sum))
			}
			res, err := tx.ExecContext(ctx, `UPDATE library_files SET partial_hash = ?
				WHERE id = ? AND size_bytes = ? AND mtime_ns = ? AND is_missing = 0`, r.Sum, r.ID, r.SizeBytes, r.MtimeNS)
			if err != nil {
				return fmt.Errorf("file %d: %w", r.ID, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			stored += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record partial hashes: %w", err)
	}
	return stored, nil
}

// HashStatus says how far hashing is, over all libraries.
type HashStatus struct {
	// CandidatesPending is the due files that may still be duplicates;
	// the duplicate groups are complete when it is 0.
	CandidatesPending int64
	CandidateBytes    int64
	// BackfillPending is the other due files: no present file can equal
	// them, but they have no content hash yet.
	BackfillPending int64
	BackfillBytes   int64
	// Unreadable is the files waiting out a read-error backoff.
	Unreadable int64
}

// Complete reports that every duplicate group is known.
func (h HashStatus) Complete() bool { return h.CandidatesPending == 0 }

// hashPending selects the present files not hashed with the algorithm the
// placeholder alg names (due or in a
// read-error backoff) through indexes only: the needs_hash partial index,
// and the dedup-group index for a digest of no or another algorithm (<>
// spelt as two ranges). The status is read on every first page of
// duplicate groups, so it must not scan a table of a million hashed files;
// INDEXED BY keeps SQLite's planner, which has no statistics, from picking
// a full index scan instead (PostgreSQL's has them, and no such clause).
func (s *Store) hashPending(alg string) string {
	needsHash := s.db.Pick(` INDEXED BY ix_library_files_needs_hash`, ``)
	dedup := s.db.Pick(` INDEXED BY ix_library_files_dedup_group`, ``)
	return `SELECT ` + pendingCols + ` FROM library_files f` + needsHash + `
		WHERE f.needs_hash = 1 AND f.is_missing = 0
	UNION ALL SELECT ` + pendingCols + ` FROM library_files f` + dedup + `
		WHERE f.hash_algorithm IS NULL AND f.needs_hash = 0 AND f.is_missing = 0 AND f.role <> 'folder'
	UNION ALL SELECT ` + pendingCols + ` FROM library_files f` + dedup + `
		WHERE f.hash_algorithm < ` + alg + ` AND f.needs_hash = 0 AND f.is_missing = 0 AND f.role <> 'folder'
	UNION ALL SELECT ` + pendingCols + ` FROM library_files f` + dedup + `
		WHERE f.hash_algorithm > ` + alg + ` AND f.needs_hash = 0 AND f.is_missing = 0 AND f.role <> 'folder'`
}

const pendingCols = `f.id, f.library_id, f.size_bytes, f.partial_hash, f.hash_retry_after`

// HashStatus counts what is still due for hashing with alg, split into the
// two passes of the hash job.
func (s *Store) HashStatus(ctx context.Context, alg protocol.HashAlgorithm) (HashStatus, error) {
	var row struct {
		Due, DueBytes, Cand, CandBytes, Unreadable int64
	}
	err := s.db.R.QueryRowContext(ctx, `SELECT coalesce(sum(1 - waiting), 0), coalesce(sum(CASE WHEN waiting = 0 THEN size_bytes END), 0),
			coalesce(sum(cand), 0), coalesce(sum(CASE WHEN cand = 1 THEN size_bytes END), 0), coalesce(sum(waiting), 0)
		FROM (SELECT f.size_bytes, CASE WHEN f.hash_retry_after > ?2 THEN 1 ELSE 0 END AS waiting,
				CASE WHEN (f.hash_retry_after IS NULL OR f.hash_retry_after <= ?2) AND `+hashCandidate+` THEN 1 ELSE 0 END AS cand
			FROM (`+s.hashPending("?1")+`) f) AS pending`,
		string(alg), s.db.NowText()).Scan(&row.Due, &row.DueBytes, &row.Cand, &row.CandBytes, &row.Unreadable)
	if err != nil {
		return HashStatus{}, fmt.Errorf("hash status: %w", err)
	}
	return HashStatus{
		CandidatesPending: row.Cand, CandidateBytes: row.CandBytes,
		BackfillPending: row.Due - row.Cand, BackfillBytes: row.DueBytes - row.CandBytes,
		Unreadable: row.Unreadable,
	}, nil
}
