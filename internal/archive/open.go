package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bindery-nas/bindery/protocol"
)

const (
	// MaxEntries caps how many entries an archive may list; more is treated
	// as a corrupt (or hostile) archive. Real comics have a few hundred.
	MaxEntries = 100_000
	// MaxComicInfoSize caps ComicInfo.xml; real ones are a few KiB.
	MaxComicInfoSize = 1 << 20
	// MaxRarDictionary caps the RAR decoder window (rardecode allocates it):
	// WinRAR's default is 4 MiB (RAR4) or 32 MiB (RAR5).
	MaxRarDictionary = 128 << 20
)

var (
	magicZip      = []byte("PK\x03\x04")
	magicZipEmpty = []byte("PK\x05\x06")
	magicZipSpan  = []byte("PK\x07\x08")
	magicRar      = []byte("Rar!\x1a\x07")
	magic7z       = []byte("7z\xbc\xaf\x27\x1c")
)

// sniffLen is how many leading bytes detection needs.
const sniffLen = 16

// Detect reads the first bytes of path and returns its real format,
// whatever its extension says (a .cbr that is really a zip is a zip).
// Unknown content is an archive_corrupt error; an unreadable file io_error.
func Detect(path string) (protocol.FileFormat, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", coded(protocol.ErrIOError, err, "detect")
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", coded(protocol.ErrIOError, err, "detect")
	}
	return DetectBytes(head[:n])
}

// DetectBytes returns the format of content starting with head (at least
// 16 bytes when the content is that long).
func DetectBytes(head []byte) (protocol.FileFormat, error) {
	switch {
	case len(head) == 0:
		return "", codedf(protocol.ErrArchiveCorrupt, "empty file")
	case bytes.HasPrefix(head, magicZip), bytes.HasPrefix(head, magicZipEmpty), bytes.HasPrefix(head, magicZipSpan):
		return protocol.FormatZip, nil
	case bytes.HasPrefix(head, magicRar):
		return protocol.FormatRar, nil
	case bytes.HasPrefix(head, magic7z):
		return protocol.FormatSevenZip, nil
	case imageKind(head) != "":
		return protocol.FormatImage, nil
	}
	return "", codedf(protocol.ErrArchiveCorrupt, "unknown format (magic % x)", head[:min(len(head), 8)])
}

// imageKind names the image format of head by magic bytes, or "".
func imageKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return "jpeg"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "gif"
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		return "webp"
	case len(head) >= 12 && bytes.Equal(head[4:8], []byte("ftyp")) &&
		(bytes.Equal(head[8:12], []byte("avif")) || bytes.Equal(head[8:12], []byte("avis"))):
		return "avif"
	case bytes.HasPrefix(head, []byte("BM")) && len(head) >= 14:
		return "bmp"
	case bytes.HasPrefix(head, []byte{0xff, 0x0a}), bytes.HasPrefix(head, []byte("\x00\x00\x00\x0cJXL \r\n\x87\n")):
		return "jxl"
	case bytes.HasPrefix(head, []byte("II*\x00")), bytes.HasPrefix(head, []byte("MM\x00*")):
		return "tiff"
	}
	return ""
}

// Open opens the archive or loose image at path, or the folder book when
// path is a folder. The format comes from magic bytes; the listing comes
// from the index only. The returned Archive keeps the file open until
// Close.
func Open(path string) (Archive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, coded(protocol.ErrIOError, err, "open")
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, coded(protocol.ErrIOError, err, "stat")
	}
	if st.IsDir() {
		f.Close()
		return openFolder(path)
	}
	a, err := openFile(f, st.Size(), filepath.Dir(path), st.Name())
	if err != nil {
		f.Close()
		return nil, err
	}
	a.(closerSetter).setCloser(f)
	return a, nil
}

// openFile opens the content of dir/name: a RAR volume or the last part
// of a split zip with the rest of its set beside it, anything else on its
// own.
func openFile(f *os.File, size int64, dir, name string) (Archive, error) {
	head := make([]byte, min(size, volumeHeadLen))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, classify(err, "read header")
	}
	if role := volumeRoleOf(head); role != NotVolume {
		return openVolumeSet(dir, name, f, size, role)
	}
	// The last part of a split zip starts with whatever entry data the
	// part before it left off in, so any content that is no other format
	// has its end record looked at.
	if format, err := DetectBytes(head[:min(len(head), sniffLen)]); err != nil || format == protocol.FormatZip {
		if a, ok, err := openSplitZip(dir, name, f, size); ok {
			return a, err
		}
	}
	return OpenReaderAt(f, size, name)
}

// OpenReaderAt opens archive content held by r (size bytes). name is used
// as the page name of a loose image. Close does not close r.
func OpenReaderAt(r io.ReaderAt, size int64, name string) (a Archive, err error) {
	defer recoverCorrupt(&err, "open")
	head := make([]byte, min(size, sniffLen))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, classify(err, "read header")
	}
	format, err := DetectBytes(head)
	if err != nil {
		if a, ok := openEmbedded(r, size); ok {
			return a, nil
		}
		return nil, err
	}
	switch format {
	case protocol.FormatZip:
		return openZip(r, size)
	case protocol.FormatRar:
		return openRarAlone(r, size)
	case protocol.FormatSevenZip:
		return open7z(r, size)
	case protocol.FormatImage:
		return openImage(r, size, name), nil
	}
	return nil, fmt.Errorf("open: unhandled format %q", format)
}

// closerSetter lets Open hand the *os.File to the archive it opened.
type closerSetter interface{ setCloser(io.Closer) }

// common implements the parts of Archive shared by every format.
type common struct {
	format protocol.FileFormat
	sel    selection
	closer io.Closer
	// read opens entry i of the format's own listing.
	read func(e Entry, limit int64) ([]byte, error)
}

func (c *common) Format() protocol.FileFormat { return c.format }
func (c *common) Pages() []Entry              { return c.sel.pages }
func (c *common) setCloser(cl io.Closer)      { c.closer = cl }

func (c *common) ComicInfo() ([]byte, bool, error) {
	if c.sel.comicInfo == nil {
		return nil, false, nil
	}
	data, err := c.ReadEntry(*c.sel.comicInfo, MaxComicInfoSize)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

func (c *common) ReadEntry(e Entry, limit int64) (data []byte, err error) {
	if e.Size > limit {
		return nil, errTooLarge(e.Name, e.Size, limit)
	}
	defer recoverCorrupt(&err, "read "+e.Name)
	return c.read(e, limit)
}

// recoverCorrupt turns a panic of a format decoder into archive_corrupt:
// the decoders are third-party code fed hostile bytes (fuzzing found
// rardecode indexing past a truncated header), and one broken file must
// never take down the scan or the worker that reads it.
func recoverCorrupt(err *error, what string) {
	if p := recover(); p != nil {
		*err = codedf(protocol.ErrArchiveCorrupt, "%s: decoder failed on malformed data: %v", what, p)
	}
}

func (c *common) Close() error {
	if c.closer == nil {
		return nil
	}
	err := c.closer.Close()
	c.closer = nil
	return err
}

// readBounded reads r to the end but never more than limit+1 bytes, so a
// header that lies about the size cannot make us allocate more than limit.
// The buffer starts at the size the header gives, plus the one byte that
// finds the end, so an honest entry is read with one allocation and no
// copy; it never grows past limit+1.
func readBounded(r io.Reader, e Entry, limit int64) ([]byte, error) {
	buf := make([]byte, 0, max(0, min(e.Size, limit, 64<<20))+1)
	for {
		if len(buf) == cap(buf) { // longer than it said: grow, never past limit+1
			buf = append(make([]byte, 0, min(2*int64(cap(buf)), limit+1)), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errTooLarge(e.Name, int64(len(buf)), limit)
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// embedScan is how far into a file a self-extracting stub may push the
// archive: WinRAR's and 7-Zip's stubs are a few hundred KiB.
const embedScan = 1 << 20

// openEmbedded reads an archive behind other bytes: a self-extracting
// .exe (a library must add the extension: it is not a default) or a zip
// with data before its first entry, which unzip and 7-Zip read. A zip is
// found from its end record, a 7z or RAR by its signature in the first
// MiB. Nothing found: ok=false, and the caller reports the unknown magic.
func openEmbedded(r io.ReaderAt, size int64) (Archive, bool) {
	if a, err := openZip(r, size); err == nil {
		return a, true
	}
	head := make([]byte, min(size, embedScan))
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	for _, m := range []struct {
		magic []byte
		open  func(io.ReaderAt, int64) (Archive, error)
	}{{magic7z, open7z}, {magicRar, openRarAlone}} {
		if i := bytes.Index(head[1:], m.magic); i >= 0 {
			off := int64(i + 1)
			if a, err := m.open(io.NewSectionReader(r, off, size-off), size-off); err == nil {
				return a, true
			}
		}
	}
	return nil, false
}
