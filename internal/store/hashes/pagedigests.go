package hashes

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
)

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
	err = s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
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
	err := s.db.R.SelectContext(ctx, &out, `SELECT d.page_size, d.digest FROM page_digests d
		JOIN library_files f ON f.id = d.file_id AND f.size_bytes = d.file_size_bytes AND f.mtime_ns = d.file_mtime_ns
		WHERE d.file_id = ? ORDER BY d.page_seq`, fileID)
	if err != nil {
		return nil, fmt.Errorf("page digests of file %d: %w", fileID, err)
	}
	return out, nil
}
