package hashes_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/internal/pagesig"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

// TestPageDigestTargetsFollowTheRule: over random libraries of books
// whose pages are drawn from a small pool (so that equal page sets,
// repacks with extra pages at either end and near misses all occur), the
// streamed selection of PageDigestTargets names exactly the books
// pagesig.Candidates names over the same signatures, less the missing
// books, those without a pages key and those digested as they are now.
func TestPageDigestTargetsFollowTheRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	control, _, _ := storetest.MustOpenDB(t)
	testfactory.Library(t, control, &testfactory.LibraryOpts{ID: 1})
	r := rand.New(rand.NewPCG(38, 40))
	pool := make([]pagesig.Page, 12)
	for i := range pool {
		pool[i] = pagesig.Page{Size: int64(100 + i), CRC32: r.Uint32(), HasCRC: true}
	}
	var books []pagesig.Book
	var bases [][]pagesig.Page
	for i := range 300 {
		var pages []pagesig.Page
		switch {
		case len(bases) > 0 && r.IntN(3) == 0: // a copy of an earlier book, with up to 4 pages added at one end
			pages = slices.Clone(bases[r.IntN(len(bases))])
			for range r.IntN(5) {
				if p := pool[r.IntN(len(pool))]; r.IntN(2) == 0 {
					pages = append([]pagesig.Page{p}, pages...)
				} else {
					pages = append(pages, p)
				}
			}
		default:
			for range 1 + r.IntN(5) {
				pages = append(pages, pool[r.IntN(len(pool))])
			}
			bases = append(bases, pages)
		}
		id := testfactory.File(t, control, &testfactory.FileOpts{LibraryID: 1, RelativePath: fmt.Sprintf("s%d/b%03d.cbz", i%7, i), Size: 1000, MtimeN: 7, Format: "zip"})
		switch r.IntN(10) {
		case 0: // missing: never a candidate, nor anyone's twin
			if _, err := storetest.Exec(ctx, control, `UPDATE library_files SET is_missing = 1, page_signature = ?, pages_key = ? WHERE id = ?`,
				pagesig.Encode(pages), pagesig.Key(pages), id); err != nil {
				t.Fatal(err)
			}
			continue
		case 1: // digested as it is now: a candidate that needs nothing
			if _, err := storetest.Exec(ctx, control, `INSERT INTO page_digests (file_id, page_seq, file_size_bytes, file_mtime_ns,
				page_size, digest) VALUES (?, 0, 1000, 7, 100, ?)`, id, make([]byte, 32)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := storetest.Exec(ctx, control, `UPDATE library_files SET page_signature = ?, pages_key = ? WHERE id = ?`,
			pagesig.Encode(pages), pagesig.Key(pages), id); err != nil {
			t.Fatal(err)
		}
		books = append(books, pagesig.Book{ID: id, Pages: pages})
	}
	digested := map[int64]bool{}
	ids, err := storetest.QueryInts(ctx, control, `SELECT file_id FROM page_digests`)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		digested[id] = true
	}
	want := slices.DeleteFunc(slices.Sorted(maps.Keys(pagesig.Candidates(books, 3))), func(id int64) bool { return digested[id] })
	targets, err := hashes.New(control).PageDigestTargets(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, tg := range targets {
		got = append(got, tg.ID)
	}
	if len(want) < 50 || !slices.Equal(got, want) {
		t.Fatalf("targets %v\nwant %v (%d)", got, want, len(want))
	}
}
