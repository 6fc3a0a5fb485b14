package hashing

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/pagesig"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// sameBookLibrary writes, once under benchDir, n books of 6 pages of
// 8 KiB of noise as stored zips, of which every tenth is a repack of the
// book before it (deflate, entries reversed, a ComicInfo.xml): n/10 true
// same_pages pairs among n books. It returns the library folder and the
// books' paths.
func sameBookLibrary(b *testing.B, n int) (string, []string) {
	dir := filepath.Join(benchDir(b), fmt.Sprintf("samebook-%d", n), "lib")
	var paths []string
	var pages []page
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("s%03d/book%05d.cbz", i/100, i))
		paths = append(paths, p)
		repack := i%10 == 9
		if !repack {
			pages = bookPagesSized(uint64(i), 6, 8*kib)
		}
		if _, err := os.Stat(p); err == nil {
			continue
		}
		data := zipBook(b, zip.Store, 0, pages, false)
		if repack {
			data = zipBook(b, zip.Deflate, 6, reversed(pages), true)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir, paths
}

func bookPagesSized(seed uint64, n, size int) []page {
	out := make([]page, n)
	for j := range out {
		out[j] = page{name: fmt.Sprintf("p%03d.jpg", j), data: noise(seed*100+uint64(j), size+j)}
	}
	return out
}

// signAll records every book's page signature as the scanner does, in
// transactions of 2,000 rows.
func signAll(b *testing.B, e *env, dir string, paths []string) {
	var stmt strings.Builder
	stmt.WriteString("BEGIN;")
	for i, p := range paths {
		a, err := archive.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		pages := make([]pagesig.Page, 0, len(a.Pages()))
		for _, pg := range a.Pages() {
			pages = append(pages, pagesig.Page{Size: pg.Size, CRC32: pg.CRC32, HasCRC: pg.HasCRC})
		}
		a.Close()
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&stmt, "UPDATE library_files SET format = 'zip', total_pages = %d, page_signature = X'%x', pages_key = X'%x' WHERE relative_path = '%s';",
			len(pages), pagesig.Encode(pages), pagesig.Key(pages), rel)
		if i%2000 == 1999 || i == len(paths)-1 {
			stmt.WriteString("COMMIT;")
			if _, err := storetest.Exec(e.ctx, e.control, stmt.String()); err != nil {
				b.Fatal(err)
			}
			stmt.Reset()
			stmt.WriteString("BEGIN;")
		}
	}
}

// BenchmarkSameBookReport: the whole "same book" report of a library of
// BENCH_SAMEBOOK_BOOKS books (default 10,000) where 10 % are repacks,
// from rows as a scan leaves them (signed, nothing hashed) to complete
// groups: the hash job (its passes, then the page digests of the
// candidates) and the listing of every group. decompressed-% is the share
// of the library's books whose pages were decompressed; digest-s is the
// job's last phase alone, groups-s the listing.
func BenchmarkSameBookReport(b *testing.B) {
	n := 10_000
	if v := os.Getenv("BENCH_SAMEBOOK_BOOKS"); v != "" {
		fmt.Sscan(v, &n)
	}
	dir, paths := sameBookLibrary(b, n)
	e := benchExecutor(b, dir, paths, "blake3")
	signAll(b, e, dir, paths)
	for _, p := range paths {
		warm(b, p)
	}
	var digested, jobNS, digestNS, listNS int64
	var passesDone time.Duration
	e.exec.afterPass = func(p hashes.HashPass) {
		if p == hashes.PassBackfill {
			passesDone = b.Elapsed()
		}
	}
	defer func() { e.exec.afterPass = nil }()
	for b.Loop() {
		b.StopTimer()
		if _, err := storetest.Exec(e.ctx, e.control, `DELETE FROM page_digests`); err != nil {
			b.Fatal(err)
		}
		resetHashes(b, e, "")
		b.StartTimer()
		start := b.Elapsed()
		res, err := e.exec.Execute(e.ctx, e.job, &progress{})
		if err != nil {
			b.Fatal(err)
		}
		jobNS += int64(b.Elapsed() - start)
		digestNS += int64(b.Elapsed() - passesDone)
		start = b.Elapsed()
		groups := listAllSameBook(b, e)
		listNS += int64(b.Elapsed() - start)
		digested += res["page_digested"]
		if groups != n/10 {
			b.Fatalf("%d same-book groups, want %d", groups, n/10)
		}
	}
	b.ReportMetric(float64(digested)/float64(b.N)/float64(n)*100, "decompressed-%")
	b.ReportMetric(float64(jobNS)/float64(b.N)/1e9, "job-s")
	b.ReportMetric(float64(digestNS)/float64(b.N)/1e9, "digest-s")
	b.ReportMetric(float64(listNS)/float64(b.N)/1e9, "groups-s")
}

// listAllSameBook pages every same-book group, 500 at a time, and counts
// the same_pages ones (it fails on any other kind: the library has none).
func listAllSameBook(b *testing.B, e *env) int {
	var after duplicates.SameBookAfter
	n := 0
	for {
		groups, err := duplicates.New(e.control).SameBookGroups(e.ctx, after, 500, duplicates.SameBookRules{Contains: 3, CommonMinSeries: 5})
		if err != nil {
			b.Fatal(err)
		}
		for _, g := range groups {
			if g.Kind != "same_pages" || len(g.Books) != 2 {
				b.Fatalf("group %s of %d books, want same_pages pairs", g.Kind, len(g.Books))
			}
			n++
		}
		if len(groups) < 500 {
			return n
		}
		last := groups[len(groups)-1]
		after = duplicates.SameBookAfter{Kind: last.Kind, Key: last.Key}
	}
}
