// Package reader serves the pages of books to readers: controld opens the
// archive read-only, with the cover renderer's decoder limits and path
// checks, and keeps the last few books open so that a reader paging
// through a solid archive continues its decoder instead of starting over.
package reader

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/internal/thumbs"
	"github.com/bindery-nas/bindery/protocol"
)

// DefaultOpenBooks is how many books stay open between requests.
const DefaultOpenBooks = 4

// Books opens books and keeps the most recently read ones open (an LRU of
// at most max books). It is safe for concurrent use.
type Books struct {
	roots pathsafe.Roots
	max   int

	mu   sync.Mutex
	lru  *list.List // of *Book, most recent first
	byID map[int64]*list.Element
}

// NewBooks keeps up to max books open (≤ 0: DefaultOpenBooks); roots are
// the folders every library must lie in (nil: the library's own path).
func NewBooks(roots pathsafe.Roots, max int) *Books {
	if max <= 0 {
		max = DefaultOpenBooks
	}
	return &Books{roots: roots, max: max, lru: list.New(), byID: map[int64]*list.Element{}}
}

// Book is one opened book. Its archive is read by one request at a time.
type Book struct {
	FileID  int64
	Path    string
	Size    int64
	ModTime time.Time
	version string // Located.Version when opened

	mu    sync.Mutex
	a     archive.Archive
	sizes []pageSize // nil until Pages measured them
	refs  int        // guarded by Books.mu
	gone  bool       // evicted or replaced; guarded by Books.mu
}

// Located is a book's file as found on disk, before it is opened.
type Located struct {
	FileID int64
	Path   string
	Info   os.FileInfo
	// set is the version of a multi-volume RAR book's whole set (every
	// volume's size and mtime); "" for a book of one file.
	set string
}

// Version names the file's content as its size and mtime do, or a
// multi-volume book's as all its volumes' do; it changes when the file,
// or any volume, is replaced.
func (l Located) Version() string {
	if l.set != "" {
		return "s" + l.set
	}
	return fmt.Sprintf("%x-%x", l.Info.Size(), l.Info.ModTime().UnixNano())
}

// Locate resolves src under its library and stats it, without opening
// it. Errors are *protocol.Error (source_missing, path_violation,
// io_error).
func (bs *Books) Locate(src thumbnails.CoverSource) (Located, error) {
	if src.IsMissing {
		return Located{}, protocol.Errorf(protocol.ErrSourceMissing, "file %d is missing from its library", src.FileID)
	}
	path, err := thumbs.ResolveSource(bs.roots, src)
	if err != nil {
		return Located{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return Located{}, thumbs.SourceError(err)
	}
	l := Located{FileID: src.FileID, Path: path, Info: st}
	if src.Volumes >= 2 {
		v, err := VersionOfSet(path)
		if err != nil {
			return Located{}, err
		}
		l.set = v.String()
	}
	return l, nil
}

// Open locates src and opens it; see OpenLocated.
func (bs *Books) Open(ctx context.Context, src thumbnails.CoverSource) (*Book, error) {
	l, err := bs.Locate(src)
	if err != nil {
		return nil, err
	}
	return bs.OpenLocated(ctx, l)
}

// OpenLocated returns the open book of l, reusing the open one while its
// version (the file's, or every volume's, size and mtime) is unchanged. Call Release when done. Errors are
// *protocol.Error (archive_* codes, source_missing, io_error).
func (bs *Books) OpenLocated(ctx context.Context, l Located) (*Book, error) {
	if b := bs.reuse(l); b != nil {
		return b, nil
	}
	a, err := archive.Open(l.Path)
	if err != nil {
		return nil, thumbs.SourceError(err)
	}
	b := &Book{FileID: l.FileID, Path: l.Path, Size: l.Info.Size(), ModTime: l.Info.ModTime(), version: l.Version(), a: a}
	bs.keep(b)
	return b, ctx.Err()
}

// reuse takes the open book of l's file when it is still that version.
func (bs *Books) reuse(l Located) *Book {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	el, ok := bs.byID[l.FileID]
	if !ok {
		return nil
	}
	b := el.Value.(*Book)
	if b.Path != l.Path || b.version != l.Version() {
		bs.dropLocked(el)
		return nil
	}
	bs.lru.MoveToFront(el)
	b.refs++
	return b
}

// keep registers a newly opened book (replacing an older one of the same
// file) and evicts the least recently used beyond the limit.
func (bs *Books) keep(b *Book) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if el, ok := bs.byID[b.FileID]; ok {
		bs.dropLocked(el)
	}
	b.refs = 1
	bs.byID[b.FileID] = bs.lru.PushFront(b)
	for bs.lru.Len() > bs.max {
		bs.dropLocked(bs.lru.Back())
	}
}

// dropLocked forgets a book; it closes when its last user releases it.
func (bs *Books) dropLocked(el *list.Element) {
	b := el.Value.(*Book)
	bs.lru.Remove(el)
	if cur, ok := bs.byID[b.FileID]; ok && cur == el {
		delete(bs.byID, b.FileID)
	}
	b.gone = true
	if b.refs == 0 {
		b.close()
	}
}

// Release ends a use of b.
func (bs *Books) Release(b *Book) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b.refs--
	if b.gone && b.refs == 0 {
		b.close()
	}
}

// Close closes every open book not in use (those in use close on
// Release).
func (bs *Books) Close() {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for bs.lru.Len() > 0 {
		bs.dropLocked(bs.lru.Front())
	}
}

func (b *Book) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.a.Close()
}

// Count is the number of pages.
func (b *Book) Count() int { return len(b.a.Pages()) }

// Format is the book's real format.
func (b *Book) Format() protocol.FileFormat { return b.a.Format() }

// ErrNoPage is page_not_found: n is outside 1..Count.
var ErrNoPage = errors.New("no such page")

// Read reads page n (1-based, natural order: the order the cover is
// picked from), refusing pages over limit bytes (source_too_large).
func (b *Book) Read(n int, limit int64) ([]byte, archive.Entry, error) {
	pages := b.a.Pages()
	if n < 1 || n > len(pages) {
		return nil, archive.Entry{}, ErrNoPage
	}
	e := pages[n-1]
	b.mu.Lock()
	defer b.mu.Unlock()
	data, err := b.a.ReadEntry(e, limit)
	if err != nil {
		return nil, e, thumbs.SourceError(err)
	}
	return data, e, nil
}
