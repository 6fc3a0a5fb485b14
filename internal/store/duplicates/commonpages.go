package duplicates

import (
	"context"
	"fmt"
)

// CommonPage is a page digest found in the books of at least M series
// (setting samebook.common_pages_min_series): a scanlator's credit page or
// an ad. Such pages are ignored when books are compared by page digests.
type CommonPage struct {
	Digest []byte `db:"digest"`
	Books  int64  `db:"books"`
	Series int64  `db:"series"`
	// ExampleFileID and ExamplePageSeq name one book page that holds it
	// (the lowest file id), for its image.
	ExampleFileID  int64 `db:"example_file_id"`
	ExamplePageSeq int64 `db:"example_page_seq"`
}

// commonPagesAfter lists the common digests after ?1, at most ?3, with
// ?2 the least number of series; only current digests of present books.
const commonPagesAfter = `SELECT d.digest, count(DISTINCT d.file_id) AS books, count(DISTINCT f.series_id) AS series,
	min(d.file_id) AS example_file_id
	FROM page_digests d JOIN library_files f ON f.id = d.file_id
		AND f.size_bytes = d.file_size_bytes AND f.mtime_ns = d.file_mtime_ns
	WHERE f.is_missing = 0 AND f.role = 'book' AND d.digest > ?1
	GROUP BY d.digest HAVING count(DISTINCT f.series_id) >= ?2
	ORDER BY d.digest LIMIT ?3`

// CommonPages pages the common page digests in digest order after after
// (nil: from the start). It groups every current page digest.
func (s *Store) CommonPages(ctx context.Context, minSeries int, after []byte, limit int) ([]CommonPage, error) {
	out, err := s.commonPages(ctx, minSeries, after, limit)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if err := s.db.R.GetContext(ctx, &out[i].ExamplePageSeq, `SELECT min(page_seq) FROM page_digests
			WHERE file_id = ? AND digest = ?`, out[i].ExampleFileID, out[i].Digest); err != nil {
			return nil, fmt.Errorf("common pages: %w", err)
		}
	}
	return out, nil
}

func (s *Store) commonPages(ctx context.Context, minSeries int, after []byte, limit int) ([]CommonPage, error) {
	if after == nil {
		after = []byte{}
	}
	var out []CommonPage
	if err := s.db.R.SelectContext(ctx, &out, commonPagesAfter, after, minSeries, limit); err != nil {
		return nil, fmt.Errorf("common pages: %w", err)
	}
	return out, nil
}

// commonDigests is the set of every common page digest.
func (s *Store) commonDigests(ctx context.Context, minSeries int) (map[string]bool, error) {
	set := map[string]bool{}
	var after []byte
	for {
		page, err := s.commonPages(ctx, minSeries, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, p := range page {
			set[string(p.Digest)] = true
		}
		if len(page) < 1000 {
			return set, nil
		}
		after = page[len(page)-1].Digest
	}
}
