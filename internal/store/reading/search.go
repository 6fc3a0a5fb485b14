package reading

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bindery-nas/bindery/internal/model"
)

// Search reads the full-text indexes of migration 26: book_search (FTS4 on
// SQLite, a tsvector table under GIN on PostgreSQL) and series_search (FTS4;
// on PostgreSQL a GIN expression index on series.name). The user's text
// never reaches MATCH or to_tsquery: ParseSearch cuts it into words of
// letters, digits and combining marks, and the engine's query is built from
// those words alone, each quoted, every word required, the last one a
// prefix (what a search box expects while the user is still typing).

// Search query limits.
const (
	MaxSearchBytes = 256
	MaxSearchTerms = 16
)

// Errors of ParseSearch; the API maps each to invalid_query.
var (
	ErrSearchEmpty    = errors.New("q is empty")
	ErrSearchTooLong  = fmt.Errorf("q is longer than %d bytes", MaxSearchBytes)
	ErrSearchUTF8     = errors.New("q is not valid UTF-8")
	ErrSearchNoTerms  = errors.New("q has no letters or digits")
	ErrSearchTooMany  = fmt.Errorf("q has more than %d words", MaxSearchTerms)
	errSearchNotWords = errors.New("search: a query must come from ParseSearch")
)

// SearchQuery is a parsed query: lower-case words, none empty.
type SearchQuery struct{ terms []string }

// Terms returns the query's words.
func (q SearchQuery) Terms() []string { return q.terms }

// ParseSearch cuts the text a user typed into words, refusing what cannot
// be a query.
func ParseSearch(text string) (SearchQuery, error) {
	switch {
	case strings.TrimSpace(text) == "":
		return SearchQuery{}, ErrSearchEmpty
	case len(text) > MaxSearchBytes:
		return SearchQuery{}, ErrSearchTooLong
	case !utf8.ValidString(text):
		return SearchQuery{}, ErrSearchUTF8
	}
	terms := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.Is(unicode.Mn, r)
	})
	switch {
	case len(terms) == 0:
		return SearchQuery{}, ErrSearchNoTerms
	case len(terms) > MaxSearchTerms:
		return SearchQuery{}, ErrSearchTooMany
	}
	return SearchQuery{terms: terms}, nil
}

// matchFTS4 is the query for FTS4's MATCH: `"w1" "w2" "w3*"`. Words hold no
// quote, space or operator character, so each stays one literal term.
func (q SearchQuery) matchFTS4() string {
	parts := make([]string, len(q.terms))
	for i, t := range q.terms {
		if i == len(q.terms)-1 {
			t += "*"
		}
		parts[i] = `"` + t + `"`
	}
	return strings.Join(parts, " ")
}

// tsquery is the query for to_tsquery('simple', …): `'w1' & 'w2' & 'w3':*`.
func (q SearchQuery) tsquery() string {
	parts := make([]string, len(q.terms))
	for i, t := range q.terms {
		parts[i] = "'" + t + "'"
		if i == len(q.terms)-1 {
			parts[i] += ":*"
		}
	}
	return strings.Join(parts, " & ")
}

// The engines' conditions on s.id; each binds the engine's query string
// (matchFTS4 or tsquery). Books are matched in search_rank.go.
const (
	seriesMatchFTS4 = ` s.id IN (SELECT docid FROM series_search WHERE series_search MATCH ?)`
	seriesMatchPG   = ` to_tsvector('simple', regexp_replace(s.name, '[^[:alnum:]]+', ' ', 'g')) @@ to_tsquery('simple', ?)`
)

// SearchSeries pages the reader's series (with books) whose name holds
// every word of the query, by id.
func (s *Store) SearchSeries(ctx context.Context, r Reader, q SearchQuery, afterID int64, offset, limit int) ([]model.Series, error) {
	if len(q.terms) == 0 {
		return nil, errSearchNotWords
	}
	match, arg := seriesMatchFTS4, q.matchFTS4()
	if s.db.Postgres {
		match, arg = seriesMatchPG, q.tsquery()
	}
	out := []model.Series{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+seriesColsS+` FROM series s WHERE`+match+`
		AND s.id > ? AND s.file_count > 0 AND `+grantOfSeries+` ORDER BY s.id LIMIT ? OFFSET ?`,
		arg, afterID, r.all(), r.UserID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("search series: %w", err)
	}
	return out, nil
}

// SearchSeriesByName pages the reader's series (with books) whose name
// holds every word of the query, in natural name order, by offset: the
// OPDS series search.
func (s *Store) SearchSeriesByName(ctx context.Context, r Reader, q SearchQuery, offset, limit int) ([]model.Series, error) {
	if len(q.terms) == 0 {
		return nil, errSearchNotWords
	}
	match, arg := seriesMatchFTS4, q.matchFTS4()
	if s.db.Postgres {
		match, arg = seriesMatchPG, q.tsquery()
	}
	out := []model.Series{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+seriesColsS+` FROM series s WHERE`+match+`
		AND s.file_count > 0 AND `+grantOfSeries+` ORDER BY s.sort_key, s.id LIMIT ? OFFSET ?`,
		arg, r.all(), r.UserID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("search series by name: %w", err)
	}
	return out, nil
}
