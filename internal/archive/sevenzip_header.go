package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/ulikunitz/xz/lzma"

	"github.com/bindery-nas/bindery/protocol"
)

// A small reader of the 7z header, run before bodgit/sevenzip for two
// things that library does not offer: telling an encrypted archive apart
// from a corrupt one (it reports a missing password as a decoder error),
// and refusing headers whose counts would make it allocate without bound.
// It walks the same structures as 7-Zip's 7zIn.cpp but keeps only coder
// ids and counts.

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

// prescan7z checks the signature header, the header CRC, encryption of
// the header or of any folder, and the entry count.
func prescan7z(r io.ReaderAt, size int64) error {
	var sig [szSigHdrSize]byte
	if _, err := r.ReadAt(sig[:], 0); err != nil {
		return classify(err, "read 7z signature header")
	}
	if crc32.ChecksumIEEE(sig[12:32]) != binary.LittleEndian.Uint32(sig[8:12]) {
		return codedf(protocol.ErrArchiveCorrupt, "7z start header: bad checksum")
	}
	off, n := binary.LittleEndian.Uint64(sig[12:20]), binary.LittleEndian.Uint64(sig[20:28])
	if n == 0 {
		return nil // empty archive
	}
	if n > szMaxHeader || off > uint64(size) || szSigHdrSize+off+n > uint64(size) {
		return codedf(protocol.ErrArchiveCorrupt, "7z header: %d bytes at %d outside a %d-byte file (truncated?)", n, off, size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, int64(szSigHdrSize+off)); err != nil {
		return classify(err, "read 7z header")
	}
	if crc32.ChecksumIEEE(hdr) != binary.LittleEndian.Uint32(sig[28:32]) {
		return codedf(protocol.ErrArchiveCorrupt, "7z header: bad checksum")
	}
	return scanHeader(r, hdr, true)
}

// scanHeader walks a plain or encoded header; an LZMA-encoded one is
// decoded (once) and walked in turn.
func scanHeader(r io.ReaderAt, hdr []byte, mayDecode bool) error {
	h := &szReader{b: hdr}
	id, err := h.byte()
	if err != nil {
		return corrupt7z(err)
	}
	switch {
	case id == szHeader:
		return corrupt7z(h.header())
	case id == szEncodedHeader && mayDecode:
		var s szStreams
		if err := h.streams(&s); err != nil {
			return corrupt7z(err)
		}
		if s.encrypted() {
			return codedf(protocol.ErrArchiveEncrypted, "7z header is encrypted")
		}
		plain, err := decodeHeader(r, &s)
		if err != nil {
			return err
		}
		return scanHeader(r, plain, false)
	}
	return corrupt7z(errSzFormat)
}

func corrupt7z(err error) error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return err
	}
	return coded(protocol.ErrArchiveCorrupt, err, "read 7z header")
}

// decodeHeader decodes an encoded header: one folder, one coder, LZMA
// (what 7-Zip writes), LZMA2 or Copy. Other codings are refused: sevenzip
// would decode them itself and could then allocate per an unchecked count.
func decodeHeader(r io.ReaderAt, s *szStreams) ([]byte, error) {
	if len(s.folders) != 1 || len(s.packSizes) != 1 || len(s.folders[0].coders) != 1 || len(s.folders[0].unpackSizes) != 1 {
		return nil, codedf(protocol.ErrArchiveCorrupt, "7z encoded header: unsupported layout")
	}
	c, unpacked := s.folders[0].coders[0], s.folders[0].unpackSizes[0]
	if unpacked > szMaxHeader || s.packSizes[0] > szMaxHeader || s.packPos > 1<<62 {
		return nil, codedf(protocol.ErrArchiveCorrupt, "7z encoded header of %d bytes is too large", unpacked)
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
		return nil, codedf(protocol.ErrArchiveCorrupt, "7z encoded header: unsupported coder % x", c.id)
	}
	if err != nil {
		return nil, coded(protocol.ErrArchiveCorrupt, err, "decode 7z header")
	}
	var out bytes.Buffer
	if _, err := io.CopyN(&out, dec, int64(unpacked)); err != nil {
		return nil, classify(err, "decode 7z header")
	}
	return out.Bytes(), nil
}

// szReader reads 7z header fields from memory, failing on overrun.
type szReader struct {
	b   []byte
	off int
}

func (h *szReader) byte() (byte, error) {
	if h.off >= len(h.b) {
		return 0, io.ErrUnexpectedEOF
	}
	h.off++
	return h.b[h.off-1], nil
}

func (h *szReader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(h.b)-h.off) {
		return nil, io.ErrUnexpectedEOF
	}
	h.off += int(n)
	return h.b[h.off-int(n) : h.off], nil
}

// number reads 7z's variable-length integer: the count of leading one bits
// of the first byte says how many little-endian bytes follow.
func (h *szReader) number() (uint64, error) {
	first, err := h.byte()
	if err != nil {
		return 0, err
	}
	var v uint64
	mask := byte(0x80)
	for i := range 8 {
		if first&mask == 0 {
			return v | uint64(first&(mask-1))<<(8*i), nil
		}
		b, err := h.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b) << (8 * i)
		mask >>= 1
	}
	return v, nil
}

// count reads a number used as an item count: it must not exceed limit
// nor the bytes left (every item takes at least one bit... one byte here,
// bit vectors aside, which callers bound with limit).
func (h *szReader) count(limit int) (int, error) {
	v, err := h.number()
	if err != nil {
		return 0, err
	}
	if v > uint64(limit) || v > uint64(len(h.b)-h.off)*8+8 {
		return 0, errSzFormat
	}
	return int(v), nil
}

func (h *szReader) expect(id byte) error {
	b, err := h.byte()
	if err == nil && b != id {
		err = errSzFormat
	}
	return err
}

// header walks a plain header up to the file count.
func (h *szReader) header() error {
	for {
		id, err := h.byte()
		if err != nil {
			return err
		}
		switch id {
		case szEnd:
			return nil
		case szArchiveProps:
			if err := h.skipProps(); err != nil {
				return err
			}
		case szAdditionalStream, szMainStreams:
			var s szStreams
			if err := h.streams(&s); err != nil {
				return err
			}
			if s.encrypted() {
				return codedf(protocol.ErrArchiveEncrypted, "7z entries are encrypted")
			}
		case szFilesInfo:
			n, err := h.number()
			if err != nil {
				return err
			}
			if n > MaxEntries {
				return codedf(protocol.ErrArchiveCorrupt, "7z: %d entries exceeds the limit of %d", n, MaxEntries)
			}
			return nil // the rest is names and attributes: sevenzip reads them
		default:
			return errSzFormat
		}
	}
}

func (h *szReader) skipProps() error {
	for {
		typ, err := h.byte()
		if err != nil || typ == szEnd {
			return err
		}
		n, err := h.number()
		if err != nil {
			return err
		}
		if _, err := h.bytes(n); err != nil {
			return err
		}
	}
}

func (h *szReader) streams(s *szStreams) error {
	for {
		id, err := h.byte()
		if err != nil {
			return err
		}
		switch id {
		case szEnd:
			return nil
		case szPackInfo:
			err = h.packInfo(s)
		case szUnpackInfo:
			err = h.unpackInfo(s)
		case szSubStreamsInfo:
			err = h.subStreams(s)
		default:
			err = errSzFormat
		}
		if err != nil {
			return err
		}
	}
}

func (h *szReader) packInfo(s *szStreams) error {
	var err error
	if s.packPos, err = h.number(); err != nil {
		return err
	}
	n, err := h.count(MaxEntries)
	if err != nil {
		return err
	}
	for {
		id, err := h.byte()
		if err != nil {
			return err
		}
		switch id {
		case szEnd:
			return nil
		case szSize:
			s.packSizes = make([]uint64, n)
			for i := range s.packSizes {
				if s.packSizes[i], err = h.number(); err != nil {
					return err
				}
			}
		case szCRC:
			if _, err := h.digests(n); err != nil {
				return err
			}
		default:
			return errSzFormat
		}
	}
}

func (h *szReader) unpackInfo(s *szStreams) error {
	if err := h.expect(szFolderID); err != nil {
		return err
	}
	n, err := h.count(MaxEntries)
	if err != nil {
		return err
	}
	if ext, err := h.byte(); err != nil || ext != 0 {
		return errors.Join(err, errSzFormat)
	}
	s.folders = make([]szFolder, n)
	for i := range s.folders {
		if err := h.folder(&s.folders[i]); err != nil {
			return err
		}
	}
	if err := h.expect(szCodersUnpackSize); err != nil {
		return err
	}
	for i := range s.folders {
		for j := range s.folders[i].unpackSizes {
			if s.folders[i].unpackSizes[j], err = h.number(); err != nil {
				return err
			}
		}
	}
	id, err := h.byte()
	if err != nil {
		return err
	}
	if id == szCRC {
		defined, err := h.digests(n)
		if err != nil {
			return err
		}
		for i := range s.folders {
			s.folders[i].hasCRC = defined[i]
		}
		id, err = h.byte()
		if err != nil {
			return err
		}
	}
	if id != szEnd {
		return errSzFormat
	}
	return nil
}

func (h *szReader) folder(f *szFolder) error {
	n, err := h.count(szMaxCoders)
	if err != nil || n == 0 {
		return errors.Join(err, errSzFormat)
	}
	var ins, outs uint64
	for range n {
		flag, err := h.byte()
		if err != nil {
			return err
		}
		if flag&0x80 != 0 {
			return errSzFormat // alternative methods: never written
		}
		var c szCoder
		if c.id, err = h.bytes(uint64(flag & 0x0f)); err != nil {
			return err
		}
		in, out := uint64(1), uint64(1)
		if flag&0x10 != 0 {
			i, err1 := h.count(szMaxCoders)
			o, err2 := h.count(szMaxCoders)
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			in, out = uint64(i), uint64(o)
		}
		if flag&0x20 != 0 {
			size, err := h.number()
			if err != nil {
				return err
			}
			if c.props, err = h.bytes(size); err != nil {
				return err
			}
		}
		ins, outs = ins+in, outs+out
		f.coders = append(f.coders, c)
	}
	if outs == 0 || ins+1 < outs {
		return errSzFormat
	}
	for range outs - 1 { // bind pairs
		if _, err := h.number(); err != nil {
			return err
		}
		if _, err := h.number(); err != nil {
			return err
		}
	}
	if packed := ins - (outs - 1); packed > 1 {
		for range packed {
			if _, err := h.number(); err != nil {
				return err
			}
		}
	}
	f.unpackSizes = make([]uint64, outs)
	return nil
}

func (h *szReader) subStreams(s *szStreams) error {
	streams := make([]int, len(s.folders))
	for i := range streams {
		streams[i] = 1
	}
	id, err := h.byte()
	if err != nil {
		return err
	}
	total := 0
	if id == szNumUnpackStream {
		for i := range streams {
			if streams[i], err = h.count(MaxEntries - total); err != nil {
				return err
			}
			total += streams[i]
		}
		if id, err = h.byte(); err != nil {
			return err
		}
	}
	if id == szSize {
		for _, n := range streams {
			for range max(n-1, 0) {
				if _, err := h.number(); err != nil {
					return err
				}
			}
		}
		if id, err = h.byte(); err != nil {
			return err
		}
	}
	digests := 0
	for i, n := range streams {
		if n != 1 || !s.folders[i].hasCRC {
			digests += n
		}
	}
	for id != szEnd {
		if id != szCRC {
			return errSzFormat
		}
		if _, err := h.digests(digests); err != nil {
			return err
		}
		if id, err = h.byte(); err != nil {
			return err
		}
	}
	return nil
}

// digests reads an optional bit vector and a CRC per defined item.
func (h *szReader) digests(n int) ([]bool, error) {
	all, err := h.byte()
	if err != nil {
		return nil, err
	}
	defined := make([]bool, n)
	var bits []byte
	if all == 0 {
		if bits, err = h.bytes(uint64(n+7) / 8); err != nil {
			return nil, err
		}
	}
	count := 0
	for i := range defined {
		defined[i] = all != 0 || bits[i/8]&(0x80>>(i%8)) != 0
		if defined[i] {
			count++
		}
	}
	_, err = h.bytes(uint64(count) * 4)
	return defined, err
}
