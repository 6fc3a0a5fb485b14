package duplicates_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

// BenchmarkSimilarCovers is the whole /duplicates/covers report over
// 100,000 books with hashed covers, a tenth of them another scan of an
// earlier cover (up to 4 bits flipped): read every hashed cover, find the
// pairs within 6 bits (the default), drop the grouped ones, first page.
// benchBooks is the size of the library the report benchmarks read.
const benchBooks = 100_000

func BenchmarkSimilarCovers(b *testing.B) {
	control, _, _ := storetest.MustOpenDB(b)
	ctx := context.Background()
	lib := testfactory.Library(b, control, nil)
	seedCovers(b, control, lib, benchBooks)
	var n int
	for b.Loop() {
		pairs, err := duplicates.New(control).SimilarCovers(ctx, duplicates.CoverPairAfter{}, 50, 6, duplicates.SameBookRules{Contains: 3, CommonMinSeries: 5})
		if err != nil || len(pairs) == 0 {
			b.Fatalf("%d pairs, %v", len(pairs), err)
		}
		n = len(pairs)
	}
	b.ReportMetric(float64(n), "pairs/page")
}

// seedCovers inserts n books, each with a ready cover whose hash is random
// or, for every tenth, a near copy of an earlier one.
func seedCovers(b *testing.B, st *store.Store, lib int64, n int) {
	b.Helper()
	ctx := context.Background()
	if _, err := storetest.Exec(ctx, st, fmt.Sprintf(`INSERT INTO library_files (library_id, relative_path, path_key, size_bytes,
		mtime_ns, format, created_at, updated_at)
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		SELECT %d, 'Series ' || (i %% 2000) || '/Issue ' || i || '.cbz', 'k' || i, 1, 1, 'zip',
		'2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000' FROM n`, n, lib)); err != nil {
		b.Fatal(err)
	}
	ids, err := storetest.QueryInt(ctx, st, `SELECT min(id) FROM library_files`)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 1))
	hashes := make([]uint64, n)
	var sb strings.Builder
	for i := range n {
		hashes[i] = rng.Uint64()
		if i%10 == 9 {
			hashes[i] = hashes[rng.IntN(i)]
			for range rng.IntN(5) {
				hashes[i] ^= 1 << rng.IntN(64)
			}
		}
		if sb.Len() == 0 {
			sb.WriteString(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, cover_hash,
				created_at, updated_at) VALUES `)
		} else {
			sb.WriteString(",")
		}
		id := ids + int64(i)
		fmt.Fprintf(&sb, "(%d, %d, 'library:%d', 'ready', 'webp', 'covers/%d.webp', %d, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')",
			id, lib, lib, id, int64(hashes[i]))
		if i%1000 == 999 || i == n-1 {
			if _, err := storetest.Exec(ctx, st, sb.String()); err != nil {
				b.Fatal(err)
			}
			sb.Reset()
		}
	}
	if _, err := storetest.Exec(ctx, st, storetest.AnalyzeSQL()); err != nil {
		b.Fatal(err)
	}
}
