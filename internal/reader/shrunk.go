package reader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/thumbs"
	"github.com/bindery-nas/bindery/protocol"
)

// PagesDir is the shrunk-page cache under the state dir.
const PagesDir = "pages"

// pageShards spreads the cache over folders (file id mod pageShards).
const pageShards = 256

// Shrunk is the cache of pages shrunk to a reader's ?width=, under
// <state>/pages, kept within a byte budget: past it, the least recently
// served files go first. It is safe for concurrent use.
type Shrunk struct {
	dir string

	mu    sync.Mutex
	total int64 // bytes in the cache; -1 until counted
}

// NewShrunk keeps the cache under stateDir/pages.
func NewShrunk(stateDir string) *Shrunk {
	return &Shrunk{dir: filepath.Join(stateDir, PagesDir), total: -1}
}

// Key names one shrunk page: the book's version (size and mtime), the
// page and the width.
type Key struct {
	FileID  int64
	Version string
	Page    int
	Width   int
}

func (k Key) path(dir string, format protocol.ImageFormat) string {
	return filepath.Join(dir, fmt.Sprint(k.FileID%pageShards),
		fmt.Sprintf("%d-%s-%d-w%d.%s", k.FileID, k.Version, k.Page, k.Width, format))
}

// Get returns a cached shrunk page, or ok=false.
func (s *Shrunk) Get(k Key) (data []byte, format protocol.ImageFormat, ok bool) {
	for _, f := range []protocol.ImageFormat{protocol.ImageJPEG, protocol.ImageWebP} {
		p := k.path(s.dir, f)
		if data, err := os.ReadFile(p); err == nil {
			now := time.Now()
			_ = os.Chtimes(p, now, now) // served: the newest in the eviction order
			return data, f, true
		}
	}
	return nil, "", false
}

// Make shrinks page to k.Width, stores it within budget bytes (≤ 0: not
// stored) and returns it. Errors are source_too_large or decode_error.
func (s *Shrunk) Make(k Key, page []byte, budget int64) ([]byte, protocol.ImageFormat, error) {
	data, format, err := thumbs.ShrinkPage(page, k.Width, thumbs.DefaultMaxPixels)
	if err != nil {
		return nil, "", err
	}
	if budget > 0 && int64(len(data)) <= budget {
		s.store(k.path(s.dir, format), data, budget)
	}
	return data, format, nil
}

// store writes atomically (temp file and rename); a failure only loses
// the cache entry.
func (s *Shrunk) store(dst string, data []byte, budget int64) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".page.*.tmp")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), dst) != nil {
		os.Remove(f.Name())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total < 0 {
		s.total = s.count()
	} else {
		s.total += int64(len(data))
	}
	if s.total > budget {
		s.total = s.evict(budget * 9 / 10)
	}
}

type cached struct {
	path string
	size int64
	used time.Time
}

func (s *Shrunk) list() []cached {
	var out []cached
	_ = filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			out = append(out, cached{p, info.Size(), info.ModTime()})
		}
		return nil
	})
	return out
}

func (s *Shrunk) count() int64 {
	var n int64
	for _, c := range s.list() {
		n += c.size
	}
	return n
}

// evict removes the least recently served files until the cache holds at
// most keep bytes, and returns what it holds.
func (s *Shrunk) evict(keep int64) int64 {
	files := s.list()
	sort.Slice(files, func(i, j int) bool { return files[i].used.After(files[j].used) })
	var n int64
	for _, c := range files {
		if n+c.size <= keep {
			n += c.size
			continue
		}
		if err := os.Remove(c.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			n += c.size
		}
	}
	return n
}

// Bytes is what the cache holds (counted once, then tracked).
func (s *Shrunk) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total < 0 {
		s.total = s.count()
	}
	return s.total
}
