package hashes_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/pagesig"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

// BenchmarkPageDigestTargets: the hash job's candidate selection over
// BENCH_SIGNED_BOOKS signed books (default 100,000, 24 pages each, 1 %
// repacked), streamed (PageDigestTargets) beside reading every signed
// row into memory and running pagesig.Candidates over them, the way it
// was done before; B/op is what each allocates.
func BenchmarkPageDigestTargets(b *testing.B) {
	n := 100_000
	if v := os.Getenv("BENCH_SIGNED_BOOKS"); v != "" {
		fmt.Sscan(v, &n)
	}
	ctx := context.Background()
	control, _, _ := storetest.MustOpenDB(b)
	testfactory.Library(b, control, &testfactory.LibraryOpts{ID: 1})
	r := rand.New(rand.NewPCG(1, 2))
	var sql strings.Builder
	var prev []pagesig.Page
	for i := range n {
		pages := make([]pagesig.Page, 24)
		for j := range pages {
			pages[j] = pagesig.Page{Size: int64(100_000 + r.IntN(400_000)), CRC32: r.Uint32(), HasCRC: true}
		}
		if i%100 == 99 {
			pages = prev // a repack of the book before
		}
		prev = pages
		fmt.Fprintf(&sql, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, format, page_signature, pages_key,
			created_at, updated_at) VALUES (1, 's%d/b%d.cbz', 1000, 7, 'zip', X'%x', X'%x', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000');`,
			i/100, i, pagesig.Encode(pages), pagesig.Key(pages))
		if i%5000 == 4999 || i == n-1 {
			if _, err := storetest.Exec(ctx, control, "BEGIN;"+sql.String()+"COMMIT;"); err != nil {
				b.Fatal(err)
			}
			sql.Reset()
		}
	}
	b.Run("streamed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			targets, err := hashes.New(control).PageDigestTargets(ctx, 3)
			if err != nil || len(targets) != 2*(n/100) {
				b.Fatalf("%d targets, %v", len(targets), err)
			}
		}
	})
	b.Run("all-rows", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rows, err := storetest.QueryRows(ctx, control, `SELECT id, library_id, relative_path, size_bytes, mtime_ns, page_signature
				FROM library_files WHERE pages_key IS NOT NULL AND is_missing = 0 AND role = 'book' ORDER BY id`)
			if err != nil {
				b.Fatal(err)
			}
			var books []pagesig.Book
			var paths []string
			for rows.Next() {
				var id, lib, size, mtime int64
				var rel string
				var sig []byte
				if err := rows.Scan(&id, &lib, &rel, &size, &mtime, &sig); err != nil {
					b.Fatal(err)
				}
				pages, _ := pagesig.Decode(sig)
				books, paths = append(books, pagesig.Book{ID: id, Pages: pages}), append(paths, rel)
			}
			rows.Close()
			if c := pagesig.Candidates(books, 3); len(c) != 2*(n/100) {
				b.Fatalf("%d candidates", len(c))
			}
		}
	})
}
