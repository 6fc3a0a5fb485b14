package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pagesig"
)

// PageDigestTarget is a candidate book (pagesig.Candidates) whose page
// digests are missing or were read from another version of the file.
type PageDigestTarget struct {
	ID           int64  `db:"id"`
	LibraryID    int64  `db:"library_id"`
	RelativePath string `db:"relative_path"`
	SizeBytes    int64  `db:"size_bytes"`
	MtimeNS      int64  `db:"mtime_ns"`
	Digested     bool   `db:"digested"`
	Signature    []byte `db:"page_signature"`
}

// signedBooks lists the present books with a pages key, and whether page
// digests of their current version are stored (page 0's row says so: a
// book's rows are written together).
const signedBooks = `SELECT f.id, f.library_id, f.relative_path, f.size_bytes, f.mtime_ns, f.page_signature,
	EXISTS (SELECT 1 FROM page_digests d WHERE d.file_id = f.id AND d.page_seq = 0
		AND d.file_size_bytes = f.size_bytes AND d.file_mtime_ns = f.mtime_ns) AS digested
	FROM library_files f
	WHERE f.pages_key IS NOT NULL AND f.page_signature IS NOT NULL AND f.is_missing = 0 AND f.role = 'book'
	ORDER BY f.id`

// PageDigestTargets returns, in id order, the candidate books of every
// library that still need page digests (groups are global: a book's twin
// in another library is read by the same job, as partial digests are).
// One pass over the signed books, whose signatures (about 7 bytes a
// page) are compared in memory.
func (s *Store) PageDigestTargets(ctx context.Context, contains int) ([]PageDigestTarget, error) {
	var rows []PageDigestTarget
	if err := s.r.SelectContext(ctx, &rows, signedBooks); err != nil {
		return nil, fmt.Errorf("page digest targets: %w", err)
	}
	books := make([]pagesig.Book, 0, len(rows))
	for _, r := range rows {
		pages, err := pagesig.Decode(r.Signature)
		if err != nil {
			continue // a signature this build cannot read names no candidate
		}
		books = append(books, pagesig.Book{ID: r.ID, Pages: pages})
	}
	cands := pagesig.Candidates(books, contains)
	return slices.DeleteFunc(rows, func(r PageDigestTarget) bool {
		return r.Digested || !cands[r.ID]
	}), nil
}

// BookPageDigests are the page digests of one book read at the file
// version SizeBytes/MtimeNS, in page order.
type BookPageDigests struct {
	FileID    int64
	SizeBytes int64
	MtimeNS   int64
	Pages     []PageDigest
}

// PageDigest is one page's uncompressed size and BLAKE3 digest.
type PageDigest struct {
	Size   int64  `db:"page_size"`
	Digest []byte `db:"digest"`
}

// RecordPageDigests stores books' page digests in one transaction under
// the job's fence f (a claim that lost its lease writes nothing:
// ErrLeaseLost). A book's earlier rows are replaced; a book whose row no
// longer has the version that was read (changed, gone or missing) gets
// none. It returns how many books were stored.
func (s *Store) RecordPageDigests(ctx context.Context, f model.Fence, books []BookPageDigests) (stored int64, err error) {
	for _, b := range books {
		for i, p := range b.Pages {
			if len(p.Digest) != 32 || p.Size < 0 {
				return 0, fmt.Errorf("record page digests: file %d page %d: digest of %d bytes, size %d", b.FileID, i, len(p.Digest), p.Size)
			}
		}
	}
	err = s.fenced(ctx, f, func(tx *sqlx.Tx) error {
		stored = 0
		for _, b := range books {
			n, err := recordBookDigests(ctx, tx, b)
			if err != nil {
				return err
			}
			stored += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record page digests: %w", err)
	}
	return stored, nil
}

func recordBookDigests(ctx context.Context, tx *sqlx.Tx, b BookPageDigests) (int64, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM page_digests WHERE file_id = ?`, b.FileID); err != nil {
		return 0, fmt.Errorf("file %d: %w", b.FileID, err)
	}
	var current int64
	if err := tx.GetContext(ctx, &current, `SELECT count(*) FROM library_files
		WHERE id = ? AND size_bytes = ? AND mtime_ns = ? AND is_missing = 0`, b.FileID, b.SizeBytes, b.MtimeNS); err != nil {
		return 0, fmt.Errorf("file %d: %w", b.FileID, err)
	}
	if current == 0 || len(b.Pages) == 0 {
		return 0, nil
	}
	for i, p := range b.Pages {
		if _, err := tx.ExecContext(ctx, `INSERT INTO page_digests (file_id, page_seq, file_size_bytes, file_mtime_ns, page_size, digest)
			VALUES (?, ?, ?, ?, ?, ?)`, b.FileID, i, b.SizeBytes, b.MtimeNS, p.Size, p.Digest); err != nil {
			return 0, fmt.Errorf("file %d page %d: %w", b.FileID, i, err)
		}
	}
	return 1, nil
}

// PageDigests returns the stored page digests of a file's current
// version, in page order (none when it has none or they are stale).
func (s *Store) PageDigests(ctx context.Context, fileID int64) ([]PageDigest, error) {
	var out []PageDigest
	err := s.r.SelectContext(ctx, &out, `SELECT d.page_size, d.digest FROM page_digests d
		JOIN library_files f ON f.id = d.file_id AND f.size_bytes = d.file_size_bytes AND f.mtime_ns = d.file_mtime_ns
		WHERE d.file_id = ? ORDER BY d.page_seq`, fileID)
	if err != nil {
		return nil, fmt.Errorf("page digests of file %d: %w", fileID, err)
	}
	return out, nil
}
