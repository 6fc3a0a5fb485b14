package reading

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
)

// Ranked book search. A book whose title (ComicInfo's, file_metadata.title)
// holds every word of the query ranks 1; a book found only through its
// path, series or people ranks 0. Results come by rank, then by id, and
// the keyset anchor is (rank, id), so paging neither repeats nor skips.
//
// The rank is computed at query time from the indexes of migration 26; no
// column of them holds the title alone:
//
//   - SQLite: book_search's title column is the title, a space and the
//     relative path. offsets() lists every hit as (column, term, byte
//     offset, size); a hit in column 0 that starts before the title's
//     byte length lies in the title. The rank is 1 when the terms hit
//     there are all the terms hit anywhere (every term hits somewhere,
//     the query requiring them all). The list is read by the Go function
//     bindery_title_rank, which the drivers register on every connection
//     (about twice as fast as reading it with json_each in SQL).
//   - PostgreSQL: the title alone is cut and turned into a tsvector as
//     book_search_source does for the whole document and matched against
//     the same tsquery. The matches drive a LATERAL lookup of each file
//     (OFFSET 0 keeps the planner from flattening it): joined plainly,
//     the planner hash-joins the matches with a sequential scan of
//     library_files, several times slower for a few thousand matches.
//
// Either costs a little per matching row, and the whole match set is
// ranked and sorted before LIMIT: a query matching most of a large library
// pays for it. BenchmarkSearch/index/author42 (the last word is a prefix:
// 2,200 matches of 100,000 books; the shared machine): SQLite about 6 ms a
// page in id order, 12 ms ranked, offsets() being most of the difference;
// PostgreSQL 9 ms in id order, 31 ms ranked.

// SearchHit is a book a search found, with its rank.
type SearchHit struct {
	model.Book
	Rank int `db:"search_rank"`
}

// Anchor is the hit's place in ranked order.
func (h SearchHit) Anchor() model.SearchAnchor { return model.SearchAnchor{Rank: h.Rank, ID: h.ID} }

// titleRankFTS4 reads h.hits, the offsets() of the row's match.
const titleRankFTS4 = `bindery_title_rank(h.hits, length(CAST(coalesce(m.title, '') AS BLOB)))`

// titleRankPG reads the query's tsquery as qq.tq.
const titleRankPG = `CASE WHEN to_tsvector('simple', regexp_replace(coalesce(m.title, ''), '[^[:alnum:]]+', ' ', 'g'))
	@@ qq.tq THEN 1 ELSE 0 END`

// The engines' queries of every readable match's id (hit_id) and
// search_rank; each binds the engine's query string, then the grant
// (all, user id).
const (
	rankedFrom    = ` FROM library_files f LEFT JOIN file_metadata m ON m.file_id = f.id`
	rankedIDsFTS4 = `SELECT f.id AS hit_id, ` + titleRankFTS4 + ` AS search_rank` + rankedFrom + `
		JOIN (SELECT docid, offsets(book_search) AS hits FROM book_search WHERE book_search MATCH ?) h ON h.docid = f.id
		WHERE` + readable
	rankedIDsPG = `SELECT bs.file_id AS hit_id, x.search_rank
		FROM (SELECT to_tsquery('simple', ?) AS tq) qq JOIN book_search bs ON bs.doc @@ qq.tq
		CROSS JOIN LATERAL (SELECT ` + titleRankPG + ` AS search_rank` + rankedFrom + `
			WHERE f.id = bs.file_id AND` + readable + ` OFFSET 0) x`
)

// SearchBooks pages the reader's books whose title, path, series or people
// hold every word of the query, ranked (title matches first) then by id:
// after the anchor (nil: from the first), skipping offset rows (OPDS pages
// by offset, the API by anchor). The page is chosen over ids and ranks
// alone; only its rows are then read in full (covers, progress), so a
// query matching many books does not read them all.
func (s *Store) SearchBooks(ctx context.Context, r Reader, q SearchQuery, after *model.SearchAnchor, offset, limit int) ([]SearchHit, error) {
	if len(q.terms) == 0 {
		return nil, errSearchNotWords
	}
	ranked, match := rankedIDsFTS4, q.matchFTS4()
	if s.db.Postgres {
		ranked, match = rankedIDsPG, q.tsquery()
	}
	rargs := []any{match, r.all(), r.UserID}
	where := ""
	if after != nil {
		where = ` WHERE search_rank < ? OR (search_rank = ? AND hit_id > ?)`
		rargs = append(rargs, after.Rank, after.Rank, after.ID)
	}
	args := append(append([]any{r.UserID}, rargs...), limit, offset)
	out := []SearchHit{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+bookCols+`, hit.search_rank`+bookFrom+`
		JOIN (SELECT hit_id, search_rank FROM (`+ranked+`) ranked`+where+`
			ORDER BY search_rank DESC, hit_id LIMIT ? OFFSET ?) hit ON hit.hit_id = f.id
		ORDER BY hit.search_rank DESC, f.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("search books: %w", err)
	}
	return out, nil
}
