package duplicates_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

// dropSummary removes the duplicate_groups summary (migration 00005) and its
// triggers, so that the plain GROUP BY path over library_files can be
// tested and benchmarked against it.
func dropSummary(tb testing.TB, st *store.Store) {
	tb.Helper()
	on := "" // PostgreSQL's triggers belong to their table
	if storetest.Postgres() {
		on = " ON library_files"
	}
	for _, q := range []string{
		`DROP TRIGGER IF EXISTS tr_library_files_dup_insert` + on,
		`DROP TRIGGER IF EXISTS tr_library_files_dup_update` + on,
		`DROP TRIGGER IF EXISTS tr_library_files_dup_delete` + on,
		`DROP TABLE IF EXISTS duplicate_groups`,
	} {
		if _, err := storetest.Exec(context.Background(), st, q); err != nil {
			tb.Fatalf("drop summary: %v", err)
		}
	}
}

// dupEnv is a database with two libraries and a Go model of its groups.
type dupEnv struct {
	ctx     context.Context
	control *store.Store
	worker  *store.Store
}

func setupDup(t testing.TB, summary bool) *dupEnv {
	t.Helper()
	control, worker, _ := storetest.MustOpenDB(t)
	e := &dupEnv{ctx: context.Background(), control: control, worker: worker}
	if !summary {
		dropSummary(t, control)
	}
	for _, id := range []int64{1, 2} {
		testfactory.Library(t, control, &testfactory.LibraryOpts{ID: id})
	}
	return e
}

type fileRow struct {
	id, lib, size     int64
	alg               string
	sum               []byte
	missing, needHash bool
}

func (e *dupEnv) insert(t testing.TB, rows []fileRow) {
	t.Helper()
	for _, r := range rows {
		var alg any
		if r.alg != "" {
			alg = r.alg
		}
		if _, err := storetest.Exec(e.ctx, e.control, `INSERT INTO library_files (id, library_id, relative_path, size_bytes,
			mtime_ns, hash_algorithm, content_hash, is_missing, needs_hash, created_at, updated_at)
			VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`, r.id, r.lib, fmt.Sprint("f/", r.id), r.size,
			alg, r.sum, r.missing, r.needHash); err != nil {
			t.Fatal(err)
		}
	}
}

// genRows makes n files in groups of 1-5 copies; sizes repeat so that many
// groups tie on (file_count, total_size_bytes), and some rows are missing,
// unhashed or hashed with the other algorithm under the same digest bytes.
func genRows(seed uint64, n int) []fileRow {
	r := rand.New(rand.NewPCG(seed, 1))
	var rows []fileRow
	for g := 0; len(rows) < n; g++ {
		sum := make([]byte, 32)
		for i := range sum {
			sum[i] = byte(r.Uint32())
		}
		alg := "blake3"
		if g%4 == 0 {
			alg = "sha256"
		}
		size := int64(r.IntN(3)) * 100
		for range 1 + r.IntN(5) {
			row := fileRow{id: int64(len(rows) + 1), lib: int64(1 + r.IntN(2)), size: size, alg: alg, sum: sum}
			switch r.IntN(10) {
			case 0:
				row.missing = true
			case 1:
				row.needHash = true
			case 2:
				row.alg = "sha256" // same bytes, other algorithm: another group
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// modelGroups computes the §6.2 list from rows in Go.
func modelGroups(rows []fileRow) []duplicates.DuplicateGroup {
	m := map[string]*duplicates.DuplicateGroup{}
	for _, r := range rows {
		if r.missing || r.needHash || r.alg == "" || r.sum == nil {
			continue
		}
		k := r.alg + ":" + hex.EncodeToString(r.sum)
		g, ok := m[k]
		if !ok {
			g = &duplicates.DuplicateGroup{GroupKey: k, HashAlgorithm: r.alg, ContentHashHex: hex.EncodeToString(r.sum)}
			m[k] = g
		}
		g.FileCount++
		g.TotalSizeBytes += r.size
	}
	var out []duplicates.DuplicateGroup
	for _, g := range m {
		if g.FileCount > 1 {
			g.WastedBytes = g.TotalSizeBytes - g.TotalSizeBytes/g.FileCount
			out = append(out, *g)
		}
	}
	slices.SortFunc(out, func(a, b duplicates.DuplicateGroup) int {
		return cmp.Or(cmp.Compare(b.FileCount, a.FileCount), cmp.Compare(b.TotalSizeBytes, a.TotalSizeBytes),
			cmp.Compare(a.HashAlgorithm, b.HashAlgorithm), cmp.Compare(a.ContentHashHex, b.ContentHashHex))
	})
	return out
}

// allGroups pages through DuplicateGroups with page size n.
func (e *dupEnv) allGroups(t testing.TB, st *store.Store, n int) []duplicates.DuplicateGroup {
	t.Helper()
	var out []duplicates.DuplicateGroup
	var after *model.GroupAnchor
	for {
		page, err := duplicates.New(st).DuplicateGroups(e.ctx, after, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > n {
			t.Fatalf("page of %d > limit %d", len(page), n)
		}
		out = append(out, page...)
		if len(page) < n {
			return out
		}
		c := page[len(page)-1].Anchor()
		after = &c
	}
}

func TestDuplicateGroups(t *testing.T) {
	for _, summary := range []bool{false, true} {
		t.Run(fmt.Sprint("summary=", summary), func(t *testing.T) {
			e := setupDup(t, summary)
			rows := genRows(42, 600)
			e.insert(t, rows)
			want := modelGroups(rows)
			if len(want) < 20 {
				t.Fatalf("generator made only %d groups", len(want))
			}
			t.Run("paging has no gap or repeat", func(t *testing.T) {
				for _, n := range []int{1, 7, 1000} {
					if got := e.allGroups(t, e.worker, n); !slices.Equal(got, want) {
						t.Fatalf("page size %d: got %d groups, want %d\ngot  %v\nwant %v", n, len(got), len(want), head(got), head(want))
					}
				}
			})
			t.Run("no group of one, missing and unhashed excluded", func(t *testing.T) {
				for _, g := range e.allGroups(t, e.worker, 50) {
					if g.FileCount < 2 || g.WastedBytes != g.TotalSizeBytes-g.TotalSizeBytes/g.FileCount {
						t.Fatalf("bad group %+v", g)
					}
				}
			})
			t.Run("group files", func(t *testing.T) {
				for _, g := range want[:10] {
					key, err := protocol.ParseGroupKey(g.GroupKey)
					if err != nil {
						t.Fatal(err)
					}
					var ids []int64
					for after := int64(0); ; {
						page, err := duplicates.New(e.worker).DuplicateGroupFiles(e.ctx, key, after, 2)
						if err != nil {
							t.Fatal(err)
						}
						for _, f := range page {
							ids = append(ids, f.ID)
						}
						if len(page) < 2 {
							break
						}
						after = page[len(page)-1].ID
					}
					var wantIDs []int64
					for _, r := range rows {
						if !r.missing && !r.needHash && r.alg == g.HashAlgorithm && bytes.Equal(r.sum, key.Hash) {
							wantIDs = append(wantIDs, r.id)
						}
					}
					if !slices.Equal(ids, wantIDs) {
						t.Fatalf("group %s: ids %v, want %v", g.GroupKey, ids, wantIDs)
					}
				}
			})
			t.Run("bad cursor", func(t *testing.T) {
				_, err := duplicates.New(e.worker).DuplicateGroups(e.ctx, &model.GroupAnchor{FileCount: 2, HashAlgorithm: "md5", ContentHashHex: "00"}, 5)
				if err == nil {
					t.Fatal("want error")
				}
			})
		})
	}
}

// TestDuplicateSummaryTracksChanges changes library_files in every way the
// scanner, the hash job and a library delete do, and checks after each step
// that the trigger-maintained summary equals a fresh aggregation.
func TestDuplicateSummaryTracksChanges(t *testing.T) {
	e := setupDup(t, true)
	rows := genRows(7, 400)
	e.insert(t, rows)
	check := func(t *testing.T, step string) {
		t.Helper()
		n, err := storetest.QueryInt(e.ctx, e.control, `SELECT COUNT(*) FROM (
			SELECT hash_algorithm, content_hash, file_count, total_size_bytes FROM duplicate_groups
			EXCEPT SELECT hash_algorithm, content_hash, COUNT(*), SUM(size_bytes) FROM library_files
			 WHERE is_missing = 0 AND needs_hash = 0 AND hash_algorithm IS NOT NULL AND content_hash IS NOT NULL
			 GROUP BY 1, 2) AS d`)
		if err != nil {
			t.Fatal(err)
		}
		m, err := storetest.QueryInt(e.ctx, e.control, `SELECT COUNT(*) FROM (
			SELECT hash_algorithm, content_hash, COUNT(*), SUM(size_bytes) FROM library_files
			 WHERE is_missing = 0 AND needs_hash = 0 AND hash_algorithm IS NOT NULL AND content_hash IS NOT NULL
			 GROUP BY 1, 2
			EXCEPT SELECT hash_algorithm, content_hash, file_count, total_size_bytes FROM duplicate_groups) AS d`)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 || m != 0 {
			t.Fatalf("%s: summary differs from aggregate (%d stale rows, %d absent)", step, n, m)
		}
	}
	check(t, "insert")
	steps := []struct{ name, sql string }{
		{"mark missing", `UPDATE library_files SET is_missing = 1 WHERE id % 7 = 0`},
		{"come back", `UPDATE library_files SET is_missing = 0 WHERE id % 14 = 0`},
		{"rescan changed", `UPDATE library_files SET needs_hash = 1, size_bytes = size_bytes + 1 WHERE id % 5 = 0`},
		{"rehash", `UPDATE library_files SET needs_hash = 0, content_hash = (SELECT content_hash FROM library_files WHERE id = 3) WHERE id % 10 = 0`},
		{"algorithm change", `UPDATE library_files SET hash_algorithm = 'sha256' WHERE id % 3 = 0 AND hash_algorithm = 'blake3'`},
		{"no-op update", `UPDATE library_files SET updated_at = '2026-01-02 00:00:00.000', size_bytes = size_bytes`},
		{"clear hash", `UPDATE library_files SET content_hash = NULL, hash_algorithm = NULL WHERE id % 11 = 0`},
		{"delete", `DELETE FROM library_files WHERE id % 13 = 0`},
		{"delete library", `DELETE FROM libraries WHERE id = 2`},
	}
	for _, s := range steps {
		if _, err := storetest.Exec(e.ctx, e.control, s.sql); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		check(t, s.name)
	}
	if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT COUNT(*) FROM library_files WHERE library_id = 2`); n != 0 {
		t.Fatalf("library delete left %d files (foreign keys off?)", n)
	}
}

func TestDuplicatePlans(t *testing.T) {
	storetest.SkipOnPostgres(t, "reads SQLite's EXPLAIN QUERY PLAN")
	for _, summary := range []bool{false, true} {
		t.Run(fmt.Sprint("summary=", summary), func(t *testing.T) {
			e := setupDup(t, summary)
			e.insert(t, genRows(1, 50))
			cur := &model.GroupAnchor{FileCount: 3, TotalSizeBytes: 100, HashAlgorithm: "blake3", ContentHashHex: strings.Repeat("ab", 32)}
			index := "ix_library_files_dedup_group"
			if summary {
				index = "ix_duplicate_groups_order"
			}
			for _, after := range []*model.GroupAnchor{nil, cur} {
				plan, err := duplicates.New(e.worker).ExplainDuplicateGroups(e.ctx, after)
				if err != nil {
					t.Fatal(err)
				}
				text := strings.Join(plan, "\n")
				if !strings.Contains(text, index) || (summary && (strings.Contains(text, "TEMP B-TREE") || (after != nil && !strings.Contains(text, "SEARCH")))) {
					t.Fatalf("cursor=%v: plan does not walk %s:\n%s", after != nil, index, text)
				}
			}
			key, _ := protocol.ParseGroupKey("sha256:" + strings.Repeat("0f", 32))
			plan, err := duplicates.New(e.worker).ExplainDuplicateGroupFiles(e.ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if text := strings.Join(plan, "\n"); !strings.Contains(text, "SEARCH library_files USING INDEX ix_library_files_dedup_group") {
				t.Fatalf("group files plan:\n%s", text)
			}
		})
	}
}

func head(g []duplicates.DuplicateGroup) []duplicates.DuplicateGroup {
	return g[:min(len(g), 3)]
}

// TestDuplicateSummaryWorkerWrites: workerd writes library_files, and the
// summary triggers then write duplicate_groups on its connection, which the
// whitelist authorizer must admit.
func TestDuplicateSummaryWorkerWrites(t *testing.T) {
	if _, _, _, ok := protocol.WritableColumns("duplicate_groups"); !ok {
		t.Skip("duplicate_groups is not yet a data-plane table in protocol/whitelist.go")
	}
	e := setupDup(t, true)
	e.insert(t, genRows(3, 20))
	if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET is_missing = 1 WHERE id = 1`); err != nil {
		t.Fatalf("worker update with summary triggers: %v", err)
	}
}

// BenchmarkDuplicateGroups pages the §6.2 list over 1,000,000 library_files
// rows forming 200,000 duplicate groups (plus 400,000 single files), from
// random anchors; it reports the p99 page latency. "aggregate" is the plain
// GROUP BY used without the summary migration, "summary" reads
// duplicate_groups. BENCH_ROWS sets the row count (default 1,000,000; a
// fifth of it are groups of three, two fifths single files).
func BenchmarkDuplicateGroups(b *testing.B) {
	rows := 1_000_000
	if v := os.Getenv("BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 500 {
			b.Fatalf("BENCH_ROWS=%q: want an integer ≥ 500", v)
		}
		rows = n
	}
	groups := rows / 5
	for _, summary := range []bool{false, true} {
		b.Run(fmt.Sprint("summary=", summary), func(b *testing.B) {
			e := setupDup(b, summary)
			gen := fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[1]d)
				INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, needs_hash,
					hash_algorithm, content_hash, created_at, updated_at)
				SELECT i, 1, 'd/' || i, CASE WHEN i <= %[2]d THEN ((i - 1) / 3 %% 5000) * 1000 ELSE i END, i, 0,
					'blake3', CAST(printf('%%032d', CASE WHEN i <= %[2]d THEN (i - 1) / 3 ELSE i END) AS BLOB), '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000'
				FROM n`, rows, 3*groups)
			if _, err := storetest.Exec(e.ctx, e.control, gen); err != nil {
				b.Fatal(err)
			}
			first, err := duplicates.New(e.worker).DuplicateGroups(e.ctx, nil, 50)
			if err != nil || len(first) != 50 || first[0].FileCount != 3 {
				b.Fatalf("first page: %v %v", len(first), err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			var lat []float64
			for b.Loop() {
				g := r.IntN(groups)
				cur := &model.GroupAnchor{FileCount: 3, TotalSizeBytes: int64(g%5000) * 3000,
					HashAlgorithm: "blake3", ContentHashHex: hex.EncodeToString([]byte(fmt.Sprintf("%032d", g)))}
				start := time.Now()
				page, err := duplicates.New(e.worker).DuplicateGroups(e.ctx, cur, 50)
				lat = append(lat, float64(time.Since(start).Microseconds()))
				if err != nil || len(page) == 0 {
					b.Fatalf("page: %d %v", len(page), err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(lat[len(lat)*99/100]/1000, "p99-ms")
		})
	}
}
