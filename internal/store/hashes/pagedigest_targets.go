package hashes

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/pagesig"
)

// PageDigestTarget is a candidate book (pagesig.Candidates' rule) whose
// page digests are missing or were read from another version of the file.
type PageDigestTarget struct {
	ID           int64  `db:"id"`
	LibraryID    int64  `db:"library_id"`
	RelativePath string `db:"relative_path"`
	SizeBytes    int64  `db:"size_bytes"`
	MtimeNS      int64  `db:"mtime_ns"`
	Digested     bool   `db:"digested"`
}

// signedWhere are the books that can be candidates: present, with a
// pages key (every page has a CRC) and a signature.
const signedWhere = `f.pages_key IS NOT NULL AND f.page_signature IS NOT NULL AND f.is_missing = 0 AND f.role = 'book'`

// PageDigestTargets returns, in id order, the candidate books of every
// library that still need page digests (groups are global: a book's twin
// in another library is read by the same job, as partial digests are).
// A book is a candidate when another book has its pages key, or when its
// pages less up to contains at the start or the end have another book's
// key (pagesig.Candidates' rule). It is PageDigestCandidates and then
// PageDigestTargetRows over every candidate; the hash job calls the two
// itself, a chunk of rows at a time.
func (s *Store) PageDigestTargets(ctx context.Context, contains int) ([]PageDigestTarget, error) {
	ids, err := s.PageDigestCandidates(ctx, contains)
	if err != nil {
		return nil, err
	}
	var out []PageDigestTarget
	for chunk := range slices.Chunk(ids, PageDigestTargetChunk) {
		rows, err := s.PageDigestTargetRows(ctx, chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// PageDigestTargetChunk is the most ids PageDigestTargetRows takes.
const PageDigestTargetChunk = 500

// PageDigestCandidates returns the ids, sorted, of the candidate books of
// every library (PageDigestTargets' rule), digested or not.
//
// Memory is 8 bytes a book and 8 bytes a candidate: the library is
// streamed twice. The first pass keeps, sorted, the first 4 bytes of every
// pages key and of every book's pagesig.Shape (8 bytes a book). The second
// keeps a book whose key's prefix occurs twice, or one of whose trimmed
// page sets has a Shape some book has and then a Key whose prefix some
// book has (noting it): most books are ruled out by the Shape, never
// sorted nor hashed. A third pass, when something was noted, adds the
// books holding a noted prefix. Equal prefixes or Shapes of unequal keys
// only add a book to read: 4-byte prefixes of n distinct keys collide in
// about n²/2³³ pairs (some 230 books read for nothing at 1,000,000 books,
// 0.02 %; 8-byte prefixes took twice the memory, 16 MB at 1,000,000, for
// none).
//
// The two sorted lists are allocated once, at the size a count of the
// signed books gives (appending grew each by a quarter at a time, every
// step a copy left to the collector: at 1,000,000 books the Go heap grew
// to 66 MB for 16 MB of lists). A book signed between the count and the
// pass still gets a place.
func (s *Store) PageDigestCandidates(ctx context.Context, contains int) ([]int64, error) {
	var n int
	if err := s.db.R.GetContext(ctx, &n, `SELECT count(*) FROM library_files f WHERE `+signedWhere); err != nil {
		return nil, fmt.Errorf("page digest targets: %w", err)
	}
	keys, shapes := make([]uint32, 0, n), make([]uint32, 0, n)
	err := s.eachSigned(ctx, func(_ int64, key []byte, pages []pagesig.Page) {
		keys = append(keys, prefix(key))
		if pages != nil {
			shapes = append(shapes, shape32(pages))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("page digest targets: %w", err)
	}
	slices.Sort(keys)
	slices.Sort(shapes)
	// cands: appended in the stream's order, sorted and deduplicated at
	// the end (a slice: 8 bytes a candidate, where a map took about 40).
	var cands []int64
	noted := map[uint32]bool{}
	err = s.eachSigned(ctx, func(id int64, key []byte, pages []pagesig.Page) {
		if count(keys, prefix(key)) > 1 {
			cands = append(cands, id)
		}
		for _, sub := range pagesig.Trimmed(pages, contains) {
			if count(shapes, shape32(sub)) == 0 {
				continue
			}
			if p := prefix(pagesig.Key(sub)); count(keys, p) > 0 {
				cands, noted[p] = append(cands, id), true
			}
		}
	})
	if err == nil && len(noted) > 0 {
		err = s.eachSigned(ctx, func(id int64, key []byte, _ []pagesig.Page) {
			if noted[prefix(key)] {
				cands = append(cands, id)
			}
		})
	}
	if err != nil {
		return nil, fmt.Errorf("page digest targets: %w", err)
	}
	slices.Sort(cands)
	cands = slices.Clip(slices.Compact(cands))
	if n >= signedCollectEvery {
		// The lists and the passes' garbage (about as much again) stay the
		// runtime's heap, returned to the OS over minutes: return them now,
		// once a call, in a library large enough for eachSigned to collect.
		debug.FreeOSMemory()
	}
	return cands, nil
}

// prefix is the first 4 bytes of a key (0 for none).
func prefix(key []byte) uint32 {
	if len(key) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(key)
}

// shape32 is the high half of pages' pagesig.Shape, whose multiplications
// carry every input bit upwards.
func shape32(pages []pagesig.Page) uint32 { return uint32(pagesig.Shape(pages) >> 32) }

// count is how often v occurs in sorted.
func count(sorted []uint32, v uint32) int {
	i, found := slices.BinarySearch(sorted, v)
	if !found {
		return 0
	}
	n := 0
	for ; i < len(sorted) && sorted[i] == v; i++ {
		n++
	}
	return n
}

// signedCollectEvery is how many rows eachSigned streams between two
// collections it runs itself.
const signedCollectEvery = 1 << 15

// eachSigned streams every signed book's id, pages key and decoded pages
// (nil when this build cannot read the signature: it names no trimmed
// twin).
//
// Every signedCollectEvery rows it runs the collector. The rows' garbage
// (the driver's values and blob copies, the decoded pages: about 135
// bytes a row) is otherwise collected only when the heap doubles what is
// live, and what is live is PageDigestCandidates' lists: at 1,000,000
// books 16 MB of lists let the heap grow to 44 MB. The lists hold no
// pointers, so a collection costs little; a library under 32,768 books
// never runs one.
func (s *Store) eachSigned(ctx context.Context, fn func(id int64, key []byte, pages []pagesig.Page)) error {
	rows, err := s.db.R.QueryContext(ctx, `SELECT f.id, f.pages_key, f.page_signature FROM library_files f WHERE `+signedWhere)
	if err != nil {
		return err
	}
	defer rows.Close()
	var id, n int64
	var key, sig sql.RawBytes // valid until the next row: nothing keeps them
	for rows.Next() {
		if err := rows.Scan(&id, &key, &sig); err != nil {
			return err
		}
		pages, err := pagesig.Decode(sig)
		if err != nil {
			pages = nil
		}
		fn(id, key, pages)
		if n++; n%signedCollectEvery == 0 {
			runtime.GC()
		}
	}
	return rows.Err()
}

// PageDigestTargetRows reads the rows of ids (at most
// PageDigestTargetChunk, sorted), in id order, and keeps the signed books
// whose current version has no digests.
func (s *Store) PageDigestTargetRows(ctx context.Context, ids []int64) ([]PageDigestTarget, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > PageDigestTargetChunk {
		return nil, fmt.Errorf("page digest targets: %d ids, at most %d a query", len(ids), PageDigestTargetChunk)
	}
	q, args, err := sqlx.In(`SELECT f.id, f.library_id, f.relative_path, f.size_bytes, f.mtime_ns,
		EXISTS (SELECT 1 FROM page_digests d WHERE d.file_id = f.id AND d.page_seq = 0
			AND d.file_size_bytes = f.size_bytes AND d.file_mtime_ns = f.mtime_ns) AS digested
		FROM library_files f WHERE f.id IN (?) AND `+signedWhere+` ORDER BY f.id`, ids)
	if err != nil {
		return nil, err
	}
	var rows []PageDigestTarget
	if err := s.db.R.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("page digest targets: %w", err)
	}
	return slices.DeleteFunc(rows, func(r PageDigestTarget) bool { return r.Digested }), nil
}
