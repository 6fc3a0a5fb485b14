package szheader

import (
	"errors"
	"io"

	"github.com/bindery-nas/bindery/internal/archive/internal/archerr"
	"github.com/bindery-nas/bindery/protocol"
)

// The byte-level half of the 7z header prescan (sevenzip_header.go): a
// bounds-checked reader of header fields and the walkers of the header's
// structures (7zIn.cpp's ReadHeader, ReadStreamsInfo, ReadUnpackInfo…),
// keeping only what the prescan decides on.

// szReader reads 7z header fields from memory, failing on overrun.
type szReader struct {
	b   []byte
	off int
	// maxEntries bounds every count of entries or streams.
	maxEntries int
	// unsupported names a coder of the entries no decoder reads ("").
	unsupported string
	// props is where the archive properties lie in b ([0, 0] when none).
	props [2]int
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
			start := h.off - 1
			if err := h.skipProps(); err != nil {
				return err
			}
			h.props = [2]int{start, h.off}
		case szAdditionalStream, szMainStreams:
			var s szStreams
			if err := h.streams(&s); err != nil {
				return err
			}
			if s.encrypted() {
				return archerr.Errorf(protocol.ErrArchiveEncrypted, "7z entries are encrypted")
			}
			if h.unsupported == "" {
				h.unsupported = s.unsupported()
			}
		case szFilesInfo:
			n, err := h.number()
			if err != nil {
				return err
			}
			if n > uint64(h.maxEntries) {
				return archerr.Errorf(protocol.ErrArchiveCorrupt, "7z: %d entries exceeds the limit of %d", n, h.maxEntries)
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
	n, err := h.count(h.maxEntries)
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
	n, err := h.count(h.maxEntries)
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
		if len(c.id) == 0 {
			// 7-Zip reads a method id as a number of that many bytes: none
			// is 0, Copy (py7zr writes such headers).
			c.id = szCoderCopy
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
			if streams[i], err = h.count(h.maxEntries - total); err != nil {
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
