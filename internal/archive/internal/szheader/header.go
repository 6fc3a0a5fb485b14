// Package szheader is a small reader of the 7z header, run before
// bodgit/sevenzip for two things that library does not offer: telling an
// encrypted archive apart from a corrupt one (it reports a missing
// password as a decoder error), and refusing headers whose counts would
// make it allocate without bound. It walks the same structures as 7-Zip's
// 7zIn.cpp but keeps only coder ids and counts.
package szheader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ulikunitz/xz/lzma"

	"github.com/bindery-nas/bindery/internal/archive/internal/archerr"
	"github.com/bindery-nas/bindery/internal/archive/internal/overlay"
	"github.com/bindery-nas/bindery/protocol"
)

const (
	szEnd              = 0x00
	szHeader           = 0x01
	szArchiveProps     = 0x02
	szAdditionalStream = 0x03
	szMainStreams      = 0x04
	szFilesInfo        = 0x05
	szPackInfo         = 0x06
	szUnpackInfo       = 0x07
	szSubStreamsInfo   = 0x08
	szSize             = 0x09
	szCRC              = 0x0a
	szFolderID         = 0x0b
	szCodersUnpackSize = 0x0c
	szNumUnpackStream  = 0x0d
	szEncodedHeader    = 0x17

	// szMaxHeader caps the header, packed or decoded.
	szMaxHeader  = 16 << 20
	szMaxCoders  = 64
	szSigHdrSize = 32
)

var (
	szCoderAES   = []byte{0x06, 0xf1, 0x07, 0x01}
	szCoderLZMA  = []byte{0x03, 0x01, 0x01}
	szCoderLZMA2 = []byte{0x21}
	szCoderCopy  = []byte{0x00}
	errSzFormat  = errors.New("malformed 7z header")
)

type szCoder struct {
	id    []byte
	props []byte
}

type szFolder struct {
	coders      []szCoder
	unpackSizes []uint64
	hasCRC      bool
}

type szStreams struct {
	packPos   uint64
	packSizes []uint64
	folders   []szFolder
}

// sevenZipMethods are the coders 7-Zip writes, by id, and whether the
// decoders (github.com/bodgit/sevenzip) read them.
var sevenZipMethods = map[string]struct {
	name string
	ok   bool
}{
	"\x00": {"Copy", true}, "\x03": {"Delta", true}, "\x03\x01\x01": {"LZMA", true}, "\x21": {"LZMA2", true},
	"\x03\x04\x01": {"PPMd", true}, "\x04\x01\x08": {"Deflate", true}, "\x04\x01\x09": {"Deflate64", true},
	"\x04\x02\x02": {"BZip2", true}, "\x04\xf7\x11\x01": {"Zstandard", true}, "\x04\xf7\x11\x02": {"Brotli", true},
	"\x04\xf7\x11\x04": {"LZ4", true}, "\x06\xf1\x07\x01": {"AES", true},
	"\x03\x03\x01\x03": {"BCJ", true}, "\x03\x03\x01\x1b": {"BCJ2", true}, "\x03\x03\x02\x05": {"PPC", true},
	"\x03\x03\x04\x01": {"IA64", false}, "\x03\x03\x05\x01": {"ARM", true}, "\x03\x03\x07\x01": {"ARMT", false},
	"\x03\x03\x08\x05": {"SPARC", true}, "\x0a": {"ARM64", true}, "\x0b": {"RISCV", false},
}

// unsupported names the first coder of s that cannot be decoded, or "".
func (s *szStreams) unsupported() string {
	for _, f := range s.folders {
		for _, c := range f.coders {
			if m, known := sevenZipMethods[string(c.id)]; !known || !m.ok {
				name := m.name
				if !known {
					name = "unknown"
				}
				return fmt.Sprintf("7z method % x (%s)", c.id, name)
			}
		}
	}
	return ""
}

func (s *szStreams) encrypted() bool {
	for _, f := range s.folders {
		for _, c := range f.coders {
			if bytes.Equal(c.id, szCoderAES) {
				return true
			}
		}
	}
	return false
}

// ErrEmpty is a valid 7z archive without a header: 7-Zip writes one for
// an empty folder.
var ErrEmpty = errors.New("empty 7z archive")

// Scan is what the prescan learned for the decoder.
type Scan struct {
	// Unsupported names a coder of the entries that no decoder reads
	// ("" when all can).
	Unsupported string
	// Header, when set, is the plain header the decoder must be given
	// instead of the archive's (Rewritten): the same without its archive
	// properties, an optional record the decoder does not know (7-Zip
	// skips it).
	Header []byte
}

// Prescan checks the signature header, the header CRC, encryption of
// the header or of any folder, and that no count of entries or streams
// passes maxEntries, or returns ErrEmpty.
func Prescan(r io.ReaderAt, size int64, maxEntries int) (Scan, error) {
	var sig [szSigHdrSize]byte
	if _, err := r.ReadAt(sig[:], 0); err != nil {
		return Scan{}, archerr.Classify(err, "read 7z signature header")
	}
	if crc32.ChecksumIEEE(sig[12:32]) != binary.LittleEndian.Uint32(sig[8:12]) {
		return Scan{}, archerr.Errorf(protocol.ErrArchiveCorrupt, "7z start header: bad checksum")
	}
	off, n := binary.LittleEndian.Uint64(sig[12:20]), binary.LittleEndian.Uint64(sig[20:28])
	if n == 0 {
		return Scan{}, ErrEmpty
	}
	if n > szMaxHeader || off > uint64(size) || szSigHdrSize+off+n > uint64(size) {
		return Scan{}, archerr.Errorf(protocol.ErrArchiveCorrupt, "7z header: %d bytes at %d outside a %d-byte file (truncated?)", n, off, size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, int64(szSigHdrSize+off)); err != nil {
		return Scan{}, archerr.Classify(err, "read 7z header")
	}
	if crc32.ChecksumIEEE(hdr) != binary.LittleEndian.Uint32(sig[28:32]) {
		return Scan{}, archerr.Errorf(protocol.ErrArchiveCorrupt, "7z header: bad checksum")
	}
	return scanHeader(r, hdr, maxEntries, true)
}

// scanHeader walks a plain or encoded header; an LZMA-encoded one is
// decoded (once) and walked in turn.
func scanHeader(r io.ReaderAt, hdr []byte, maxEntries int, mayDecode bool) (Scan, error) {
	h := &szReader{b: hdr, maxEntries: maxEntries}
	id, err := h.byte()
	if err != nil {
		return Scan{}, corrupt7z(err)
	}
	switch {
	case id == szHeader:
		if err := h.header(); err != nil {
			return Scan{}, corrupt7z(err)
		}
		scan := Scan{Unsupported: h.unsupported}
		if h.props[1] > 0 {
			scan.Header = append(append([]byte{szHeader}, hdr[1:h.props[0]]...), hdr[h.props[1]:]...)
		}
		return scan, nil
	case id == szEncodedHeader && mayDecode:
		var s szStreams
		if err := h.streams(&s); err != nil {
			return Scan{}, corrupt7z(err)
		}
		if s.encrypted() {
			return Scan{}, archerr.Errorf(protocol.ErrArchiveEncrypted, "7z header is encrypted")
		}
		plain, err := decodeHeader(r, &s)
		if err != nil {
			return Scan{}, err
		}
		return scanHeader(r, plain, maxEntries, false)
	}
	return Scan{}, corrupt7z(errSzFormat)
}

// Rewritten presents r with its header replaced by a plain one,
// appended past the end of the archive (so no packed stream is touched),
// and the start header pointing at it with fresh checksums. It returns
// the new reader and its size.
func Rewritten(r io.ReaderAt, size int64, hdr []byte) (io.ReaderAt, int64) {
	var sig [szSigHdrSize]byte
	_, _ = r.ReadAt(sig[:], 0) // read by Prescan already
	binary.LittleEndian.PutUint64(sig[12:20], uint64(size-szSigHdrSize))
	binary.LittleEndian.PutUint64(sig[20:28], uint64(len(hdr)))
	binary.LittleEndian.PutUint32(sig[28:32], crc32.ChecksumIEEE(hdr))
	binary.LittleEndian.PutUint32(sig[8:12], crc32.ChecksumIEEE(sig[12:32]))
	return overlay.ReaderAt{R: r, Size: size, Head: sig[:], Tail: hdr}, size + int64(len(hdr))
}

func corrupt7z(err error) error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return err
	}
	return archerr.Wrap(protocol.ErrArchiveCorrupt, err, "read 7z header")
}

// decodeHeader decodes an encoded header: one folder, one coder, LZMA
// (what 7-Zip writes), LZMA2 or Copy. Other codings are refused: sevenzip
// would decode them itself and could then allocate per an unchecked count.
func decodeHeader(r io.ReaderAt, s *szStreams) ([]byte, error) {
	if len(s.folders) != 1 || len(s.packSizes) != 1 || len(s.folders[0].coders) != 1 || len(s.folders[0].unpackSizes) != 1 {
		return nil, archerr.Errorf(protocol.ErrArchiveCorrupt, "7z encoded header: unsupported layout")
	}
	c, unpacked := s.folders[0].coders[0], s.folders[0].unpackSizes[0]
	if unpacked > szMaxHeader || s.packSizes[0] > szMaxHeader || s.packPos > 1<<62 {
		return nil, archerr.Errorf(protocol.ErrArchiveCorrupt, "7z encoded header of %d bytes is too large", unpacked)
	}
	packed := io.NewSectionReader(r, int64(szSigHdrSize+s.packPos), int64(s.packSizes[0]))
	dictCap := int(max(unpacked, lzma.MinDictCap))
	var dec io.Reader
	var err error
	switch {
	case bytes.Equal(c.id, szCoderCopy):
		dec = packed
	case bytes.Equal(c.id, szCoderLZMA) && len(c.props) == 5:
		// The classic .lzma header: properties, dictionary size (capped to
		// the output size, always enough), uncompressed size.
		dict := min(uint64(binary.LittleEndian.Uint32(c.props[1:])), uint64(dictCap))
		head := append([]byte{c.props[0]}, binary.LittleEndian.AppendUint32(nil, uint32(dict))...)
		head = binary.LittleEndian.AppendUint64(head, unpacked)
		dec, err = lzma.ReaderConfig{DictCap: dictCap}.NewReader(io.MultiReader(bytes.NewReader(head), packed))
	case bytes.Equal(c.id, szCoderLZMA2) && len(c.props) == 1:
		dec, err = lzma.Reader2Config{DictCap: dictCap}.NewReader2(packed)
	default:
		return nil, archerr.Errorf(protocol.ErrArchiveCorrupt, "7z encoded header: unsupported coder % x", c.id)
	}
	if err != nil {
		return nil, archerr.Wrap(protocol.ErrArchiveCorrupt, err, "decode 7z header")
	}
	var out bytes.Buffer
	if _, err := io.CopyN(&out, dec, int64(unpacked)); err != nil {
		return nil, archerr.Classify(err, "decode 7z header")
	}
	return out.Bytes(), nil
}
