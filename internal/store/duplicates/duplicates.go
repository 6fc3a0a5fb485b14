package duplicates

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// DuplicateGroup is one group of protocol §6.2: the live, hashed files that
// share (hash_algorithm, content_hash), when there are at least two.
type DuplicateGroup struct {
	GroupKey       string
	HashAlgorithm  string
	ContentHashHex string
	FileCount      int64
	TotalSizeBytes int64
	// WastedBytes is what deleting all copies but one would free:
	// total_size_bytes - total_size_bytes/file_count.
	WastedBytes int64
}

// Anchor is the §6.2 anchor that continues the list after g.
func (g DuplicateGroup) Anchor() model.GroupAnchor {
	return model.GroupAnchor{
		FileCount:      g.FileCount,
		TotalSizeBytes: g.TotalSizeBytes,
		HashAlgorithm:  g.HashAlgorithm,
		ContentHashHex: g.ContentHashHex,
	}
}

// DuplicateFile is one member of a duplicate group (protocol §6.3).
type DuplicateFile struct {
	ID           int64  `db:"id"`
	LibraryID    int64  `db:"library_id"`
	RelativePath string `db:"relative_path"`
	SizeBytes    int64  `db:"size_bytes"`
	MtimeNS      int64  `db:"mtime_ns"`
	// Role tells a book from a page of a folder book or series art.
	Role protocol.FileRole `db:"role"`
}

// groupQualifies is the §6.2 source filter: a row belongs to its group only
// when it is live and its hash is current.
const groupQualifies = `is_missing = 0 AND needs_hash = 0
	AND hash_algorithm IS NOT NULL AND content_hash IS NOT NULL`

// DuplicateGroups returns up to limit groups in protocol §6.2 order
// (file_count DESC, total_size_bytes DESC, hash_algorithm, content_hash),
// starting after the anchor when after is not nil. Keyset only, no OFFSET:
// the hex order of a lowercase digest is the byte order of the blob, so the
// anchor compares on the raw content_hash.
//
// Strategy: when the duplicate_groups summary (migration 00005) exists, a
// page is one index range over it; otherwise the groups are aggregated from
// library_files through ix_library_files_dedup_group, which is correct but
// reads every hashed row on each page.
func (s *Store) DuplicateGroups(ctx context.Context, after *model.GroupAnchor, limit int) ([]DuplicateGroup, error) {
	if limit <= 0 {
		return nil, nil
	}
	q, args, err := s.duplicateGroupsQuery(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return s.scanGroups(ctx, q, args...)
}

// ExplainDuplicateGroups returns the query plan of a DuplicateGroups page.
func (s *Store) ExplainDuplicateGroups(ctx context.Context, after *model.GroupAnchor) ([]string, error) {
	q, args, err := s.duplicateGroupsQuery(ctx, after, 50)
	if err != nil {
		return nil, err
	}
	return s.db.Explain(ctx, q, args)
}

func (s *Store) duplicateGroupsQuery(ctx context.Context, after *model.GroupAnchor, limit int) (string, []any, error) {
	summary, err := s.hasDuplicateSummary(ctx)
	if err != nil {
		return "", nil, err
	}
	var anchor []any
	if after != nil {
		key, err := protocol.ParseGroupKey(after.HashAlgorithm + ":" + after.ContentHashHex)
		if err != nil {
			return "", nil, fmt.Errorf("duplicate groups: anchor: %w", err)
		}
		anchor = []any{after.FileCount, after.TotalSizeBytes, string(key.Algorithm), key.Hash}
	}
	if summary {
		q := `SELECT hash_algorithm, content_hash, file_count, total_size_bytes
			FROM duplicate_groups WHERE file_count > 1`
		var args []any
		if anchor != nil {
			q += ` AND (neg_file_count, neg_total_size_bytes, hash_algorithm, content_hash) > (0 - ?, 0 - ?, ?, ?)`
			args = anchor
		}
		q += ` ORDER BY neg_file_count, neg_total_size_bytes, hash_algorithm, content_hash LIMIT ?`
		return q, append(args, limit), nil
	}
	q := `SELECT hash_algorithm, content_hash, COUNT(*) AS file_count, SUM(size_bytes) AS total_size_bytes
		FROM library_files WHERE ` + groupQualifies + `
		GROUP BY hash_algorithm, content_hash
		HAVING COUNT(*) > 1`
	var args []any
	if anchor != nil {
		q += ` AND (COUNT(*) < ?1 OR (COUNT(*) = ?1 AND (SUM(size_bytes) < ?2 OR (SUM(size_bytes) = ?2
			AND (hash_algorithm > ?3 OR (hash_algorithm = ?3 AND content_hash > ?4))))))`
		args = anchor
	}
	q += fmt.Sprintf(` ORDER BY file_count DESC, total_size_bytes DESC, hash_algorithm, content_hash LIMIT ?%d`, len(args)+1)
	return q, append(args, limit), nil
}

// hasDuplicateSummary reports whether migration 00005's summary table is
// present in this database.
func (s *Store) hasDuplicateSummary(ctx context.Context) (bool, error) {
	var n int
	err := s.db.R.GetContext(ctx, &n, s.db.Pick(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'duplicate_groups'`,
		`SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'duplicate_groups'`))
	if err != nil {
		return false, fmt.Errorf("duplicate groups: %w", err)
	}
	return n > 0, nil
}

func (s *Store) scanGroups(ctx context.Context, q string, args ...any) ([]DuplicateGroup, error) {
	rows, err := s.db.R.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("duplicate groups: %w", err)
	}
	defer rows.Close()
	var out []DuplicateGroup
	for rows.Next() {
		var g DuplicateGroup
		var sum []byte
		if err := rows.Scan(&g.HashAlgorithm, &sum, &g.FileCount, &g.TotalSizeBytes); err != nil {
			return nil, fmt.Errorf("duplicate groups: %w", err)
		}
		g.ContentHashHex = hex.EncodeToString(sum)
		g.GroupKey = g.HashAlgorithm + ":" + g.ContentHashHex
		g.WastedBytes = g.TotalSizeBytes - g.TotalSizeBytes/g.FileCount
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("duplicate groups: %w", err)
	}
	return out, nil
}

// DuplicateGroupFiles returns up to limit members of the group key in id
// order after afterID (protocol §6.3). An unknown key yields no rows.
func (s *Store) DuplicateGroupFiles(ctx context.Context, key protocol.GroupKey, afterID int64, limit int) ([]DuplicateFile, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []DuplicateFile
	err := s.db.R.SelectContext(ctx, &out, groupFilesQuery, string(key.Algorithm), key.Hash, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("duplicate group files: %w", err)
	}
	return out, nil
}

// ExplainDuplicateGroupFiles returns the query plan of a DuplicateGroupFiles page.
func (s *Store) ExplainDuplicateGroupFiles(ctx context.Context, key protocol.GroupKey) ([]string, error) {
	return s.db.Explain(ctx, groupFilesQuery, []any{string(key.Algorithm), key.Hash, 0, 50})
}

const groupFilesQuery = `SELECT id, library_id, relative_path, size_bytes, mtime_ns, role
	FROM library_files
	WHERE hash_algorithm = ? AND content_hash = ? AND ` + groupQualifies + ` AND id > ?
	ORDER BY id LIMIT ?`
