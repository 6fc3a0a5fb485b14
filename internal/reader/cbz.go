package reader

import (
	"archive/zip"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
	"unicode/utf8"

	"github.com/bindery-nas/bindery/protocol"
)

// A multi-volume RAR book is several files, which no reader app opens as
// one. It is downloaded as a cbz instead: a zip of stored (uncompressed)
// entries, every page in page order and then ComicInfo.xml. Stored
// entries have the sizes the archive's index states, so the zip's length
// is known before a byte of it is decoded: CBZ plans the entries and
// measures the zip by writing its headers with the data counted, not
// read; WriteTo then decodes one page at a time (the page limit bounds
// memory) and writes each with its CRC-32, the headers byte for byte the
// ones measured.

// ComicInfoName is the name of ComicInfo.xml in a cbz.
const ComicInfoName = "ComicInfo.xml"

// CBZ is a book planned as a stored zip.
type CBZ struct {
	book      *Book
	limit     int64
	modified  time.Time
	entries   []cbzEntry
	comicInfo []byte
	// Size is the zip's length in bytes.
	Size int64
}

type cbzEntry struct {
	name string
	size int64
	page int // 1-based; 0 is ComicInfo.xml
}

// ErrSizeMismatch: a page's data is not as long as the archive's index
// said, which a zip whose length was promised cannot absorb.
var ErrSizeMismatch = errors.New("page size differs from the archive's index")

// CBZ plans b as a cbz: its pages (each refused over limit bytes, as the
// page route does) and its ComicInfo.xml. Errors are *protocol.Error.
func (b *Book) CBZ(limit int64) (*CBZ, error) {
	z := &CBZ{book: b, limit: limit, modified: b.ModTime}
	for i, e := range b.a.Pages() {
		if e.Size > limit {
			return nil, protocol.Errorf(protocol.ErrSourceTooLarge, "page %d (%s) is %d bytes, over the limit of %d", i+1, e.Name, e.Size, limit)
		}
		z.entries = append(z.entries, cbzEntry{name: e.Name, size: e.Size, page: i + 1})
	}
	if len(z.entries) == 0 {
		return nil, protocol.Errorf(protocol.ErrNoPages, "the book has no pages")
	}
	b.mu.Lock()
	info, ok, err := b.a.ComicInfo()
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if ok {
		z.comicInfo = info
		z.entries = append(z.entries, cbzEntry{name: ComicInfoName, size: int64(len(info))})
	}
	var n countWriter
	if err := z.write(&n, func(e cbzEntry) ([]byte, error) { return nil, nil }); err != nil {
		return nil, err
	}
	z.Size = n.n
	return z, nil
}

// WriteTo writes the zip, decoding one page at a time. A page that cannot
// be read, or whose length is not the index's, stops it with the error:
// the caller has promised Size bytes and must end the response short.
func (z *CBZ) WriteTo(w io.Writer) (int64, error) {
	cw := countWriter{w: w}
	err := z.write(&cw, func(e cbzEntry) ([]byte, error) {
		if e.page == 0 {
			return z.comicInfo, nil
		}
		data, _, err := z.book.Read(e.page, z.limit)
		if err != nil {
			return nil, err
		}
		if int64(len(data)) != e.size {
			return nil, fmt.Errorf("page %d (%s): %d bytes, the index says %d: %w", e.page, e.name, len(data), e.size, ErrSizeMismatch)
		}
		return data, nil
	})
	return cw.n, err
}

// write lays the zip out on w. read returns an entry's data; nil data
// (measuring) writes the entry's size in zeros, which count the same.
func (z *CBZ) write(w io.Writer, read func(cbzEntry) ([]byte, error)) error {
	zw := zip.NewWriter(w)
	date, clock := msDosTime(z.modified)
	for _, e := range z.entries {
		data, err := read(e)
		if err != nil {
			return err
		}
		fh := &zip.FileHeader{Name: e.name, Method: zip.Store, ModifiedDate: date, ModifiedTime: clock,
			CompressedSize64: uint64(e.size), UncompressedSize64: uint64(e.size), CRC32: crc32.ChecksumIEEE(data)}
		if !isASCII(e.name) && utf8.ValidString(e.name) {
			fh.Flags |= 0x800 // the name is UTF-8
		}
		fw, err := zw.CreateRaw(fh)
		if err != nil {
			return err
		}
		if data == nil {
			err = writeZeros(fw, e.size)
		} else {
			_, err = fw.Write(data)
		}
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

var zeros [32 << 10]byte

func writeZeros(w io.Writer, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// countWriter counts what passes to w (nil: counts only).
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.w == nil {
		c.n += int64(len(p))
		return len(p), nil
	}
	k, err := c.w.Write(p)
	c.n += int64(k)
	return k, err
}

// msDosTime is t (UTC) as the zip headers' MS-DOS date and time, which
// run from 1980 to 2107.
func msDosTime(t time.Time) (date, clock uint16) {
	t = t.UTC()
	switch {
	case t.Year() < 1980:
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	case t.Year() > 2107:
		t = time.Date(2107, 12, 31, 23, 59, 58, 0, time.UTC)
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	clock = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, clock
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
