package duplicates

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"
)

// BookGroupKind is the kind of a same-book group (GET /duplicates/books).
type BookGroupKind string

// The kinds of same-book groups, in the order they are listed.
const (
	KindSamePages        BookGroupKind = "same_pages"          // equal ordered page digests
	KindContains         BookGroupKind = "contains"            // one book's pages plus up to N at the start or end
	KindSamePagesByIndex BookGroupKind = "same_pages_by_index" // equal page signatures, not all books digested yet
)

var kindRank = map[BookGroupKind]int{KindSamePages: 0, KindContains: 1, KindSamePagesByIndex: 2}

// Valid reports whether k names a kind of group.
func (k BookGroupKind) Valid() bool { _, ok := kindRank[k]; return ok }

// SameBookAfter is a keyset position in the list of groups: after the
// group of that kind and key (the zero value: from the start).
type SameBookAfter struct {
	Kind BookGroupKind
	Key  []byte
}

func (a SameBookAfter) before(g SameBookGroup) bool {
	if a.Kind == "" {
		return true
	}
	return cmp.Or(cmp.Compare(kindRank[a.Kind], kindRank[g.Kind]), bytes.Compare(a.Key, g.Key)) < 0
}

// digestedBook is a present book with the page digests of its current
// version.
type digestedBook struct {
	SameBook
	pages [][]byte
	// all is every page's digest; pages leaves out the common pages once
	// comparableBooks has read them.
	all [][]byte
}

// comparableBooks are the digested books as they are compared: the pages
// found in books of at least minSeries series (CommonPages) are left out
// of each book's pages, and kept in its all.
func (s *Store) comparableBooks(ctx context.Context, minSeries int) ([]digestedBook, error) {
	books, err := s.digestedBooks(ctx)
	if err != nil {
		return nil, err
	}
	common, err := s.commonDigests(ctx, minSeries)
	if err != nil {
		return nil, err
	}
	for i := range books {
		books[i].all = books[i].pages
		books[i].pages = slices.DeleteFunc(slices.Clone(books[i].pages), func(d []byte) bool { return common[string(d)] })
	}
	return books, nil
}

// digestedBooks reads every present book's current page digests.
func (s *Store) digestedBooks(ctx context.Context) ([]digestedBook, error) {
	rows, err := s.db.R.QueryxContext(ctx, `SELECT f.id, f.library_id, f.relative_path, f.format, f.size_bytes, f.total_pages,
		f.content_hash, d.digest
		FROM page_digests d JOIN library_files f ON f.id = d.file_id
			AND f.size_bytes = d.file_size_bytes AND f.mtime_ns = d.file_mtime_ns
		WHERE f.is_missing = 0 AND f.role = 'book'
		ORDER BY f.library_id, f.path_key, f.id, d.page_seq`)
	if err != nil {
		return nil, fmt.Errorf("page digests: %w", err)
	}
	defer rows.Close()
	var out []digestedBook
	for rows.Next() {
		var b SameBook
		var digest []byte
		if err := rows.Scan(&b.ID, &b.LibraryID, &b.RelativePath, &b.Format, &b.SizeBytes, &b.TotalPages, &b.contentHash, &digest); err != nil {
			return nil, fmt.Errorf("page digests: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].ID != b.ID {
			out = append(out, digestedBook{SameBook: b})
		}
		last := &out[len(out)-1]
		last.pages = append(last.pages, digest)
	}
	return out, rows.Err()
}

// listKey is the SHA-256 of an ordered list of page digests.
func listKey(pages [][]byte) string {
	h := sha256.New()
	for _, p := range pages {
		h.Write(p)
	}
	return string(h.Sum(nil))
}

// digestGroups groups the digested books: same_pages, the books of one
// ordered list of page digests (whatever the container, compression,
// entry order or non-page entries), when they differ in bytes or format;
// contains, the books of one list and those that hold it with up to
// contains extra pages at the start or the end, keyed by the shorter
// list. A book may be in both kinds.
func digestGroups(books []digestedBook, contains int) []SameBookGroup {
	byKey := map[string][]SameBook{}
	for _, b := range books {
		if len(b.pages) == 0 {
			continue
		}
		k := listKey(b.pages)
		byKey[k] = append(byKey[k], b.SameBook)
	}
	var groups []SameBookGroup
	for k, bs := range byKey {
		if len(bs) > 1 && !identical(bs) {
			groups = append(groups, SameBookGroup{Kind: KindSamePages, Key: []byte(k), Books: bs})
		}
	}
	containing := map[string][]SameBook{}
	for _, b := range books {
		// A book is in a contains group once, at its first cut (fewest
		// pages, those at the start first): [x x x] holds [x] at either end.
		held := map[string]bool{}
		for k := 1; k <= contains && k < len(b.pages); k++ {
			for _, cut := range []struct{ start, end int }{{k, 0}, {0, k}} {
				key := listKey(b.pages[cut.start : len(b.pages)-cut.end])
				if _, ok := byKey[key]; ok && !held[key] {
					held[key] = true
					x := b.SameBook
					x.ExtraStart, x.ExtraEnd = cut.start, cut.end
					containing[key] = append(containing[key], x)
				}
			}
		}
	}
	for k, extra := range containing {
		groups = append(groups, SameBookGroup{Kind: KindContains, Key: []byte(k), Books: append(slices.Clone(byKey[k]), extra...)})
	}
	return groups
}

// identical reports whether books are byte-identical copies of one file
// by their content hashes (those are duplicate groups, not same books).
func identical(books []SameBook) bool {
	for _, b := range books {
		if b.contentHash == nil || !bytes.Equal(b.contentHash, books[0].contentHash) {
			return false
		}
	}
	return true
}

// SameBookRules are the settings that shape the groups:
// samebook.contains_pages and samebook.common_pages_min_series.
type SameBookRules struct {
	Contains        int
	CommonMinSeries int
}

// SameBookGroups pages the groups in (kind, key) order after after, at
// most limit (common pages, CommonPages, are left out of every book's
// list before books are compared): first the groups by page digests (same_pages, then
// contains: issue 38), computed from every current page digest at each
// call; then, as the fallback for books not digested yet, the groups by
// page signature whose books do not all have current digests
// (same_pages_by_index).
func (s *Store) SameBookGroups(ctx context.Context, after SameBookAfter, limit int, rules SameBookRules) ([]SameBookGroup, error) {
	var out []SameBookGroup
	// digested is the books the digest groups were read from: the index
	// groups take a book as digested only if it is one of them. Read
	// apart, a digest batch committed between the two reads would leave
	// its books in neither kind of group.
	var digested map[int64]bool
	if after.Kind != KindSamePagesByIndex {
		books, err := s.comparableBooks(ctx, rules.CommonMinSeries)
		if err != nil {
			return nil, err
		}
		digested = make(map[int64]bool, len(books))
		for _, b := range books {
			digested[b.ID] = true
		}
		for _, g := range digestGroups(books, rules.Contains) {
			if after.before(g) {
				out = append(out, g)
			}
		}
		slices.SortFunc(out, func(a, b SameBookGroup) int {
			return cmp.Or(cmp.Compare(kindRank[a.Kind], kindRank[b.Kind]), bytes.Compare(a.Key, b.Key))
		})
		if len(out) >= limit {
			return out[:limit], nil
		}
		after = SameBookAfter{}
	}
	rest, err := s.indexGroups(ctx, after.Key, limit-len(out), digested)
	return append(out, rest...), err
}

// indexGroups pages the groups by page signature that are not fully
// digested, in key order after the key after. With digested (not nil), a
// book is digested only if it is in it, whatever the database says now.
func (s *Store) indexGroups(ctx context.Context, after []byte, limit int, digested map[int64]bool) ([]SameBookGroup, error) {
	if after == nil {
		after = []byte{}
	}
	var out []SameBookGroup
	for len(out) < limit {
		var keys [][]byte
		if err := s.db.R.SelectContext(ctx, &keys, sameBookKeys, after, limit); err != nil {
			return nil, fmt.Errorf("same-book groups: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		groups, err := s.indexGroupBooks(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			if digested != nil {
				for i := range g.Books {
					g.Books[i].Digested = digested[g.Books[i].ID]
				}
			}
			if len(out) < limit && slices.ContainsFunc(g.Books, func(b SameBook) bool { return !b.Digested }) {
				out = append(out, g)
			}
		}
		after = keys[len(keys)-1]
	}
	return out, nil
}

func (s *Store) indexGroupBooks(ctx context.Context, keys [][]byte) ([]SameBookGroup, error) {
	q, args, err := sqlx.In(`SELECT f.id, f.library_id, f.relative_path, f.format, f.size_bytes, f.total_pages, f.pages_key,
		EXISTS (SELECT 1 FROM page_digests d WHERE d.file_id = f.id AND d.page_seq = 0
			AND d.file_size_bytes = f.size_bytes AND d.file_mtime_ns = f.mtime_ns) AS digested
		FROM library_files f WHERE f.pages_key IN (?) AND f.is_missing = 0 AND f.role = 'book'
		ORDER BY f.pages_key, f.library_id, f.path_key, f.id`, keys)
	if err != nil {
		return nil, err
	}
	var books []SameBook
	if err := s.db.R.SelectContext(ctx, &books, q, args...); err != nil {
		return nil, fmt.Errorf("same-book groups: books: %w", err)
	}
	var groups []SameBookGroup
	for _, b := range books {
		if n := len(groups); n == 0 || string(groups[n-1].Key) != string(b.PagesKey) {
			groups = append(groups, SameBookGroup{Kind: KindSamePagesByIndex, Key: b.PagesKey})
		}
		g := &groups[len(groups)-1]
		g.Books = append(g.Books, b)
	}
	return groups, nil
}
