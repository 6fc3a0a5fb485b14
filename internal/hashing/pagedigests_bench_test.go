package hashing

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// pageBenchBooks writes, once under benchDir, n candidate books (of 24
// pages of 160 KiB of noise, like JPEG pages that do not compress) as
// deflate zips and their non-solid 7z repacks, and returns the paths and
// the pages' total bytes.
func pageBenchBooks(b *testing.B, n int) ([]string, int64) {
	dir := filepath.Join(benchDir(b), fmt.Sprintf("pagedigest-%d", n))
	var paths []string
	var total int64
	for i := range n {
		pages := make([]page, 24)
		for j := range pages {
			pages[j] = page{name: fmt.Sprintf("p%03d.jpg", j), data: noise(uint64(i*100+j), 160*kib+j)}
			total += 2 * int64(len(pages[j].data))
		}
		for _, ext := range []string{".cbz", ".cb7"} {
			p := filepath.Join(dir, fmt.Sprintf("book%03d%s", i, ext))
			paths = append(paths, p)
			if _, err := os.Stat(p); err == nil {
				continue
			}
			data := zipBook(b, zip.Deflate, 6, pages, true)
			if ext == ".cb7" {
				data = sevenZipBook(b, pages, false)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, p := range paths {
		warm(b, p)
	}
	return paths, total
}

// BenchmarkPageDigests: the hash job's page-digest pass over candidate
// books (decompress and BLAKE3 every page, one book at a time) beside
// `7zz t` on the same books (decompress and check the CRCs: the floor of
// decompression), in page bytes per second. BENCH_PAGE_BOOKS sets the
// number of books of each format (default 12).
func BenchmarkPageDigests(b *testing.B) {
	n := 12
	if v := os.Getenv("BENCH_PAGE_BOOKS"); v != "" {
		fmt.Sscan(v, &n)
	}
	paths, total := pageBenchBooks(b, n)
	for _, format := range []string{".cbz", ".cb7"} {
		var books []string
		for _, p := range paths {
			if filepath.Ext(p) == format {
				books = append(books, p)
			}
		}
		b.Run("digest"+format, func(b *testing.B) {
			b.SetBytes(total / 2)
			for b.Loop() {
				digestAll(b, books)
			}
		})
		b.Run("7zz_t"+format, func(b *testing.B) {
			b.SetBytes(total / 2)
			for b.Loop() {
				for _, p := range books {
					runTool(b, "7zz", "t", "-mmt=1", p)
				}
			}
		})
	}
}

func digestAll(b *testing.B, paths []string) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		if pages, err := PageDigests(f, fi.Size(), fi.Name()); err != nil || len(pages) != 24 {
			b.Fatalf("%s: %d pages, %v", p, len(pages), err)
		}
		f.Close()
	}
}
