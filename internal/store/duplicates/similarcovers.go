package duplicates

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/bindery-nas/bindery/internal/model"
)

// Similar covers (issue 38, item 5): pairs of present books whose ready
// covers' hashes (thumbnails.cover_hash) are within a Hamming distance,
// and which no other report already ties: not byte-identical copies (one
// content hash), not one same-book group (one page signature, or one
// same_pages or contains group of page digests). "Probably the same issue,
// another scan." A report only: nothing here feeds a delete plan.

// CoverBook is a book of a SimilarCoverPair with its newest hashed cover.
type CoverBook struct {
	ID           int64   `db:"id"`
	LibraryID    int64   `db:"library_id"`
	RelativePath string  `db:"relative_path"`
	Format       *string `db:"format"`
	SizeBytes    int64   `db:"size_bytes"`
	CoverUpdated *int64  `db:"cover_updated_at"`
	ThumbnailID  int64   `db:"thumbnail_id"`
	CoverHash    int64   `db:"cover_hash"`
	ContentHash  []byte  `db:"content_hash"` // only while it describes the file (needs_hash = 0)
	PagesKey     []byte  `db:"pages_key"`
}

// CoverVersion is the ?v= of the book's cover URL (model.File.CoverVersion).
func (b CoverBook) CoverVersion() string { return model.CoverVersion(b.CoverUpdated, b.ThumbnailID) }

// SimilarCoverPair is two books, the lower id first, whose cover hashes
// differ in Distance bits.
type SimilarCoverPair struct {
	Distance int
	A, B     CoverBook
}

// CoverPairAfter is a keyset position in the list of pairs, ordered by
// (Distance, A.ID, B.ID): after that pair. A = 0: from the start.
type CoverPairAfter struct {
	Distance int
	A, B     int64
}

func (a CoverPairAfter) before(p SimilarCoverPair) bool {
	return cmp.Or(cmp.Compare(a.Distance, p.Distance), cmp.Compare(a.A, p.A.ID), cmp.Compare(a.B, p.B.ID)) < 0
}

// hashedCovers reads every present book with its newest ready, hashed
// cover (of any format), in id order.
const hashedCovers = `SELECT f.id, f.library_id, f.relative_path, f.format, f.size_bytes, f.cover_updated_at,
		CASE WHEN f.needs_hash = 0 THEN f.content_hash END AS content_hash, f.pages_key, t.cover_hash,
		t.id AS thumbnail_id
	FROM thumbnails t JOIN library_files f ON f.id = t.file_id
	WHERE t.status = 'ready' AND t.cover_hash IS NOT NULL AND f.is_missing = 0 AND f.role = 'book'
	  AND NOT EXISTS (SELECT 1 FROM thumbnails n WHERE n.file_id = t.file_id AND n.status = 'ready'
		AND n.cover_hash IS NOT NULL AND n.id > t.id)
	ORDER BY f.id`

// SimilarCovers pages the pairs of books whose covers are within distance
// bits (0..16), closest first, after after, at most limit. It computes
// every pair at each call (nearCoverPairs: banding, not every pair of
// covers), then drops the pairs already tied by a content hash, a page
// signature or a page-digest group (rules shape those as in
// SameBookGroups).
func (s *Store) SimilarCovers(ctx context.Context, after CoverPairAfter, limit, distance int, rules SameBookRules) ([]SimilarCoverPair, error) {
	if distance < 0 || distance > maxCoverDistance {
		return nil, fmt.Errorf("similar covers: distance %d outside 0..%d", distance, maxCoverDistance)
	}
	var books []CoverBook
	if err := s.db.R.SelectContext(ctx, &books, hashedCovers); err != nil {
		return nil, fmt.Errorf("similar covers: %w", err)
	}
	hashes := make([]uint64, len(books))
	for i, b := range books {
		hashes[i] = uint64(b.CoverHash)
	}
	near := nearCoverPairs(hashes, distance)
	if len(near) == 0 {
		return nil, nil
	}
	groups, err := s.digestGroupsByBook(ctx, rules)
	if err != nil {
		return nil, err
	}
	var out []SimilarCoverPair
	for _, p := range near {
		a, b := books[p.i], books[p.j] // i < j, and books are in id order
		pair := SimilarCoverPair{Distance: p.distance, A: a, B: b}
		if (after.A != 0 && !after.before(pair)) || tied(a, b, groups) {
			continue
		}
		out = append(out, pair)
	}
	slices.SortFunc(out, func(x, y SimilarCoverPair) int {
		return cmp.Or(cmp.Compare(x.Distance, y.Distance), cmp.Compare(x.A.ID, y.A.ID), cmp.Compare(x.B.ID, y.B.ID))
	})
	return out[:min(limit, len(out))], nil
}

// tied reports whether a and b are already in one group of another
// report: byte-identical, one page signature, or one page-digest group.
func tied(a, b CoverBook, groups map[int64][]string) bool {
	if a.ContentHash != nil && bytes.Equal(a.ContentHash, b.ContentHash) {
		return true
	}
	if a.PagesKey != nil && bytes.Equal(a.PagesKey, b.PagesKey) {
		return true
	}
	for _, g := range groups[a.ID] {
		if slices.Contains(groups[b.ID], g) {
			return true
		}
	}
	return false
}

// digestGroupsByBook maps each book of a same_pages or contains group
// (as SameBookGroups computes them) to the keys of its groups.
func (s *Store) digestGroupsByBook(ctx context.Context, rules SameBookRules) (map[int64][]string, error) {
	books, err := s.comparableBooks(ctx, rules.CommonMinSeries)
	if err != nil {
		return nil, err
	}
	out := map[int64][]string{}
	for _, g := range digestGroups(books, rules.Contains) {
		for _, b := range g.Books {
			out[b.ID] = append(out[b.ID], string(g.Kind)+string(g.Key))
		}
	}
	return out, nil
}
