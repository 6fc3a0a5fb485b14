package archive

import (
	"errors"
	"hash/crc32"
	"io"

	"github.com/bodgit/sevenzip"

	"github.com/bindery-nas/bindery/internal/archive/deflate64"
	"github.com/bindery-nas/bindery/internal/archive/internal/szheader"
	"github.com/bindery-nas/bindery/internal/archive/liblzma"
	"github.com/bindery-nas/bindery/protocol"
)

// An empty coder id is method 0, Copy, to 7-Zip, which reads an id as a
// number of as many bytes as it has; sevenzip looks ids up by their bytes.
func init() {
	sevenzip.RegisterDecompressor(nil, func(_ []byte, _ uint64, rs []io.ReadCloser) (io.ReadCloser, error) {
		if len(rs) != 1 {
			return nil, errors.New("copy: need exactly one stream")
		}
		return rs[0], nil
	})
	sevenzip.RegisterDecompressor([]byte{0x03, 0x01, 0x01}, lzmaDecompressor(liblzma.NewLZMA))
	sevenzip.RegisterDecompressor([]byte{0x21}, lzmaDecompressor(liblzma.NewLZMA2))
	sevenzip.RegisterDecompressor([]byte{0x04, 0x01, 0x09}, func(_ []byte, _ uint64, rs []io.ReadCloser) (io.ReadCloser, error) {
		if len(rs) != 1 {
			return nil, errors.New("deflate64: need exactly one stream")
		}
		return deflate64.NewReader(rs[0]), nil
	})
}

// lzmaDecompressor is a sevenzip decoder of LZMA or LZMA2 through
// liblzma (twice sevenzip's own speed), its window under MaxDictionary.
func lzmaDecompressor(open func([]byte, uint64, io.Reader, uint64) (*liblzma.Reader, error)) sevenzip.Decompressor {
	return func(props []byte, size uint64, rs []io.ReadCloser) (io.ReadCloser, error) {
		if len(rs) != 1 {
			return nil, errors.New("lzma: need exactly one stream")
		}
		r, err := open(props, size, rs[0], MaxDictionary)
		if errors.Is(err, liblzma.ErrWindowTooLarge) {
			return nil, codedf(protocol.ErrSourceTooLarge, "7z LZMA window over the limit of %d MiB", MaxDictionary>>20)
		}
		if err != nil {
			return nil, err
		}
		return readCloser{r, func() error { return errors.Join(r.Close(), rs[0].Close()) }}, nil
	}
}

// readCloser is a reader with its own Close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

type sevenZipArchive struct {
	common
	files []*sevenzip.File
	// unsupported names a coder no decoder reads ("" when all can): a
	// page that fails to decode is then unsupported_compression.
	unsupported string
}

// open7z prescans the header (encryption, counts), then lets sevenzip
// parse the listing. No folder is decoded to list pages.
func open7z(r io.ReaderAt, size int64) (Archive, error) {
	scan, err := szheader.Prescan(r, size, MaxEntries)
	if errors.Is(err, szheader.ErrEmpty) { // a sound archive of nothing: no_pages
		a := &sevenZipArchive{}
		a.common = common{format: protocol.FormatSevenZip, read: a.read}
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	if scan.Header != nil {
		r, size = szheader.Rewritten(r, size, scan.Header)
	}
	zr, err := sevenzip.NewReader(r, size)
	if err != nil {
		return nil, sevenZipError(err, "list 7z")
	}
	if len(zr.File) > MaxEntries {
		return nil, codedf(protocol.ErrArchiveCorrupt, "list 7z: %d entries exceeds the limit of %d", len(zr.File), MaxEntries)
	}
	raw := make([]rawEntry, 0, len(zr.File))
	for i, f := range zr.File {
		raw = append(raw, rawEntry{name: f.Name, size: int64(min(f.UncompressedSize, 1<<62)), dir: f.FileInfo().IsDir(), index: i,
			crc: f.CRC32, hasCRC: f.UncompressedSize == 0 || f.CRC32 != 0})
	}
	a := &sevenZipArchive{files: zr.File, unsupported: scan.Unsupported}
	a.common = common{format: protocol.FormatSevenZip, sel: selectEntries(raw), read: a.read}
	return a, nil
}

// sevenZipError maps sevenzip errors: its ReadError says whether an
// encrypting coder was involved, which without a password means locked.
func sevenZipError(err error, what string) error {
	var re *sevenzip.ReadError
	if errors.As(err, &re) && re.Encrypted {
		return coded(protocol.ErrArchiveEncrypted, err, what)
	}
	var rv sevenzip.ReadError
	if errors.As(err, &rv) && rv.Encrypted {
		return coded(protocol.ErrArchiveEncrypted, err, what)
	}
	return classify(err, what)
}

func (a *sevenZipArchive) read(e Entry, limit int64) ([]byte, error) {
	if e.index < 0 || e.index >= len(a.files) {
		return nil, codedf(protocol.ErrArchiveCorrupt, "read %q: no such entry", e.Name)
	}
	rc, err := a.files[e.index].Open()
	if err != nil {
		return nil, a.readError(err, e)
	}
	defer rc.Close()
	data, err := readBounded(rc, e, limit)
	if err != nil {
		return nil, a.readError(err, e)
	}
	// sevenzip checks the header's checksums but not an entry's: a page
	// whose bytes changed would render garbage (7zz t says CRC Failed).
	// Zero is "no CRC recorded" to sevenzip (a real CRC of 0 is 1 in 2³²).
	if want := a.files[e.index].CRC32; want != 0 && crc32.ChecksumIEEE(data) != want {
		return nil, codedf(protocol.ErrArchiveCorrupt, "read %q: CRC failed (%08x, want %08x)", e.Name, crc32.ChecksumIEEE(data), want)
	}
	return data, nil
}

// readError is sevenZipError, except that a decoder failure in an archive
// with a coder no decoder reads is that coder's fault.
func (a *sevenZipArchive) readError(err error, e Entry) error {
	err = sevenZipError(err, "read "+e.Name)
	if a.unsupported != "" && protocol.CodeOf(err, "") == protocol.ErrArchiveCorrupt {
		return codedf(protocol.ErrUnsupportedCompression, "read %q: %s is not supported", e.Name, a.unsupported)
	}
	return err
}
