package reader

import (
	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/thumbs"
	"github.com/bindery-nas/bindery/protocol"
)

// Page is one page of a book as a reader lists it.
type Page struct {
	// Number is 1-based, in natural order.
	Number int
	// Name is the entry's path inside the archive (or the file name in a
	// folder book).
	Name string
	// MediaType is image/jpeg, image/png, ... by the page's magic bytes.
	MediaType string
	// Width and Height are 0 when the page cannot be read or decoded;
	// ErrorCode then says why.
	Width, Height int
	ErrorCode     string
	Size          int64
}

// Wide reports whether the page is a spread: width > height × percent/100
// (ui.reader.wide_ratio_threshold).
func (p Page) Wide(percent int64) bool {
	return p.Height > 0 && int64(p.Width)*100 > int64(p.Height)*percent
}

type pageSize struct {
	w, h      int
	mediaType string
	code      string
}

// Pages lists the pages with their sizes, reading each page once (the
// header is what counts, but an archive entry is read whole) and keeping
// the sizes while the book stays open. A page that fails is listed with
// its error code; only a failure of the whole archive is an error.
func (b *Book) Pages(limit int64) []Page {
	entries := b.a.Pages()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sizes == nil {
		b.sizes = make([]pageSize, len(entries))
		for i, e := range entries {
			b.sizes[i] = measure(b.a, e, limit)
		}
	}
	out := make([]Page, len(entries))
	for i, e := range entries {
		s := b.sizes[i]
		out[i] = Page{Number: i + 1, Name: e.Name, MediaType: s.mediaType, Width: s.w, Height: s.h,
			ErrorCode: s.code, Size: e.Size}
	}
	return out
}

func measure(a archive.Archive, e archive.Entry, limit int64) pageSize {
	data, err := a.ReadEntry(e, limit)
	if err != nil {
		return pageSize{mediaType: "application/octet-stream", code: protocol.CodeOf(thumbs.SourceError(err), protocol.ErrIOError)}
	}
	s := pageSize{mediaType: archive.ImageMediaType(data[:min(len(data), 16)])}
	if s.w, s.h, err = thumbs.ImageSize(data); err != nil {
		s.code = protocol.CodeOf(err, protocol.ErrDecodeError)
	}
	return s
}
