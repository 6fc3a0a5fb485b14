package reader

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
)

// source is the row a book is opened from: dir is its library.
func source(dir, rel string, id int64) thumbnails.CoverSource {
	return thumbnails.CoverSource{FileID: id, LibraryPath: dir, RelativePath: rel}
}

func writeBook(t *testing.T, path string, kind fixtures.Kind, b fixtures.Book) []fixtures.File {
	t.Helper()
	if err := fixtures.WriteBook(path, kind, b); err != nil {
		t.Fatal(err)
	}
	files, err := b.Files()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestBooksReopenChangedAndEvict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bs := NewBooks(nil, 2)
	ctx := context.Background()
	writeBook(t, filepath.Join(dir, "a.cbz"), fixtures.KindCBZ, fixtures.Book{Pages: 3})
	a, err := bs.Open(ctx, source(dir, "a.cbz", 1))
	if err != nil || a.Count() != 3 {
		t.Fatalf("open: %v", err)
	}
	bs.Release(a)
	if again, _ := bs.Open(ctx, source(dir, "a.cbz", 1)); again != a {
		t.Fatal("an unchanged book was opened again")
	} else {
		bs.Release(again)
	}
	// Replaced under the same id: the size and mtime differ.
	writeBook(t, filepath.Join(dir, "a.cbz"), fixtures.KindCBZ, fixtures.Book{Pages: 5})
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "a.cbz"), later, later); err != nil {
		t.Fatal(err)
	}
	b, err := bs.Open(ctx, source(dir, "a.cbz", 1))
	if err != nil || b == a || b.Count() != 5 || !a.gone {
		t.Fatalf("changed book: %v, %d pages, old one dropped %v", err, b.Count(), a.gone)
	}
	// Two more books with b still in use: b leaves the LRU but stays
	// readable until released.
	for i, name := range []string{"c.cbz", "d.cbz"} {
		writeBook(t, filepath.Join(dir, name), fixtures.KindCBZ, fixtures.Book{})
		o, err := bs.Open(ctx, source(dir, name, int64(i+2)))
		if err != nil {
			t.Fatal(err)
		}
		bs.Release(o)
	}
	if !b.gone {
		t.Fatal("the least recently used book was not evicted")
	}
	if _, _, err := b.Read(5, 1<<20); err != nil {
		t.Fatalf("a book in use was closed under its reader: %v", err)
	}
	bs.Release(b)
	if _, _, err := b.Read(1, 1<<20); err == nil {
		t.Fatal("an evicted, released book is still open")
	}
	bs.Close()
}

// TestConcurrentReadersOfASolidBook: readers of one open solid 7z take
// turns on its decoder and each gets its own page.
func TestConcurrentReadersOfASolidBook(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := writeBook(t, filepath.Join(dir, "s.cb7"), fixtures.KindCB7, fixtures.Book{Pages: 24})
	bs := NewBooks(nil, 0)
	defer bs.Close()
	var wg sync.WaitGroup
	for r := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := bs.Open(context.Background(), source(dir, "s.cb7", 9))
			if err != nil {
				t.Error(err)
				return
			}
			defer bs.Release(b)
			pages := b.Pages(1 << 20)
			for i := range 24 {
				n := (i+r*4)%24 + 1
				data, _, err := b.Read(n, 1<<20)
				if err != nil || !bytes.Equal(data, fileData(files, pages[n-1].Name)) {
					t.Errorf("reader %d page %d: %v", r, n, err)
				}
			}
		}()
	}
	wg.Wait()
}

func fileData(files []fixtures.File, name string) []byte {
	for _, f := range files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

func TestShrunkStaysWithinBudget(t *testing.T) {
	t.Parallel()
	s := NewShrunk(t.TempDir())
	page, err := fixtures.Image(fixtures.JPEG, 800, 1200, 3)
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := s.Make(Key{FileID: 1, Version: "v", Page: 1, Width: 400}, page, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	budget := int64(len(first)) * 3
	for n := 2; n <= 8; n++ {
		if _, _, err := s.Make(Key{FileID: 1, Version: "v", Page: n, Width: 400}, page, budget); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // distinct mtimes for the eviction order
	}
	if got := s.Bytes(); got > budget || got == 0 {
		t.Fatalf("cache holds %d bytes, budget %d", got, budget)
	}
	if _, _, ok := s.Get(Key{FileID: 1, Version: "v", Page: 8, Width: 400}); !ok {
		t.Error("the newest page was evicted")
	}
	if _, _, ok := s.Get(Key{FileID: 1, Version: "v", Page: 1, Width: 400}); ok {
		t.Error("the oldest page outlived the budget")
	}
}
