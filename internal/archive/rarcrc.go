package archive

import (
	"encoding/binary"
	"io"

	"github.com/nwaples/rardecode/v2"
)

// rardecode lists names and sizes but not the CRC-32 that every RAR file
// header carries, which page signatures need (internal/pagesig). rarCRCs
// reads the file headers of one volume itself (RAR's technote: RAR 1.5–4
// fixed fields, RAR5 variable-length integers) and returns, in header
// order, each entry's name and CRC. It gives up (nil) on anything it does
// not fully understand, encrypted headers, an entry split across volumes,
// or a header it cannot read: the entries then simply have no CRC.

// rarHeaderCRC is one file header's name, CRC and kind.
type rarHeaderCRC struct {
	name   string
	crc    uint32
	dir    bool
	hasCRC bool
	size   int64 // unpacked, RAR5 only
}

// maxRarHeader bounds one header read for its name (RAR4 names are at most
// 64 KiB; a header larger than this is left alone).
const maxRarHeader = 1 << 16

// rarCRCs reads the CRCs of the single-volume archive r (size bytes).
func rarCRCs(r io.ReaderAt, size int64) []rarHeaderCRC {
	head := make([]byte, len(magicRar5))
	if n, _ := r.ReadAt(head, 0); n < len(magicRar)+1 {
		return nil
	}
	if string(head) == string(magicRar5) {
		return rar5CRCs(r, size)
	}
	if string(head[:len(magicRar)+1]) == string(magicRar)+"\x00" {
		return rar4CRCs(r, size)
	}
	return nil
}

const (
	rar4SplitBefore = 0x0001
	rar4SplitAfter  = 0x0002
	rar4DirMask     = 0x00e0
	rar4Unicode     = 0x0200
)

func rar4CRCs(r io.ReaderAt, size int64) []rarHeaderCRC {
	var out []rarHeaderCRC
	var h [rar4BlockLen + 4]byte
	for off := int64(0); off < size; {
		if n, _ := r.ReadAt(h[:], off); n < rar4BlockLen {
			return nil
		}
		typ, flags, hsize := h[2], binary.LittleEndian.Uint16(h[3:]), int64(binary.LittleEndian.Uint16(h[5:]))
		if hsize < rar4BlockLen {
			return nil
		}
		data := int64(0)
		if flags&rar4LongBlock != 0 {
			data = int64(binary.LittleEndian.Uint32(h[7:]))
		}
		switch typ {
		case rar4TypeMain:
			if flags&rar4HeadersLock != 0 {
				return nil
			}
		case rar4TypeEnd:
			return out
		case rar4TypeFile:
			e, large, ok := rar4File(r, off, hsize, flags)
			if !ok {
				return nil
			}
			data += large
			out = append(out, e)
		}
		off += hsize + data
	}
	return out
}

// rar4File reads one file header: the CRC at 16, the name's length at 26,
// the high sizes at 32 when the file is large, then the name.
func rar4File(r io.ReaderAt, off, hsize int64, flags uint16) (e rarHeaderCRC, highPack int64, ok bool) {
	if flags&(rar4SplitBefore|rar4SplitAfter) != 0 || hsize > maxRarHeader || hsize < 32 {
		return e, 0, false
	}
	b := make([]byte, hsize)
	if n, _ := r.ReadAt(b, off); int64(n) < hsize {
		return e, 0, false
	}
	nameAt := int64(32)
	if flags&rar4LargeFile != 0 {
		nameAt += 8
		highPack = int64(binary.LittleEndian.Uint32(b[32:])) << 32
	}
	nameLen := int64(binary.LittleEndian.Uint16(b[26:]))
	if nameAt+nameLen > hsize {
		return e, 0, false
	}
	name := b[nameAt : nameAt+nameLen]
	if flags&rar4Unicode != 0 {
		if i := indexByte(name, 0); i >= 0 {
			name = nil // an encoded Unicode name: matched by position only
		}
	}
	e = rarHeaderCRC{name: string(name), crc: binary.LittleEndian.Uint32(b[16:]), hasCRC: true, dir: flags&rar4DirMask == rar4DirMask}
	return e, highPack, true
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

const (
	rar5TypeFile    = 2
	rar5TypeEncrypt = 4
	rar5TypeEnd     = 5
	rar5HasExtra    = 0x01
	rar5HasData     = 0x02
	rar5SplitBefore = 0x08
	rar5SplitAfter  = 0x10
	rar5FileDir     = 0x01
	rar5FileMtime   = 0x02
	rar5FileCRC     = 0x04
)

func rar5CRCs(r io.ReaderAt, size int64) []rarHeaderCRC {
	var out []rarHeaderCRC
	complete := true
	_, err := rar5Walk(r, size, func(h rar5Header) bool {
		switch h.typ {
		case rar5TypeEncrypt:
			complete = false
		case rar5TypeFile:
			e, ok := rar5File(h.body)
			complete = ok && (e.hasCRC || e.dir) && h.flags&(rar5SplitBefore|rar5SplitAfter) == 0
			out = append(out, e)
		}
		return complete
	})
	if err != nil || !complete {
		return nil
	}
	return out
}

// rar5File reads a file header's body: flags, size, attributes, the
// mtime and CRC when flagged, compression, host OS, then the name. ok is
// false when the body is shorter than its fields say.
func rar5File(b []byte) (e rarHeaderCRC, ok bool) {
	f := rar5Fields{b: b, ok: true}
	fileFlags := f.vint()
	e.size = int64(min(f.vint(), 1<<62))
	f.vint() // attributes
	if fileFlags&rar5FileMtime != 0 {
		f.bytes(4)
	}
	e.hasCRC = fileFlags&rar5FileCRC != 0
	if e.hasCRC {
		if crc := f.bytes(4); crc != nil {
			e.crc = binary.LittleEndian.Uint32(crc)
		}
	}
	f.vint() // compression
	f.vint() // host OS
	name := f.bytes(f.vint())
	if !f.ok {
		return e, false
	}
	e.name, e.dir = string(name), fileFlags&rar5FileDir != 0
	return e, true
}

// rar5Fields reads a header's fields in order. Once one is short, ok is
// false and every later read is empty.
type rar5Fields struct {
	b  []byte
	ok bool
}

func (f *rar5Fields) vint() uint64 {
	if !f.ok {
		return 0
	}
	v, n := rar5Vint(f.b)
	if n == 0 {
		f.ok = false
		return 0
	}
	f.b = f.b[n:]
	return v
}

// bytes takes the next n bytes.
func (f *rar5Fields) bytes(n uint64) []byte {
	if !f.ok || n > uint64(len(f.b)) {
		f.ok = false
		return nil
	}
	v := f.b[:n]
	f.b = f.b[n:]
	return v
}

// rar5Vint reads a RAR5 variable-length integer: 7 bits a byte, low first,
// the high bit set on every byte but the last. n is 0 when b holds none.
func rar5Vint(b []byte) (v uint64, n int) {
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// rarEntryCRCs pairs the headers' CRCs with rardecode's listing, by
// position, when both list the same entries: the same count, and the same
// name wherever the header's name could be read. Otherwise nothing is
// paired.
func rarEntryCRCs(files []*rardecode.File, headers []rarHeaderCRC) []rarHeaderCRC {
	if len(headers) != len(files) {
		return nil
	}
	for i, f := range files {
		h := headers[i]
		if h.dir != f.IsDir || (h.name != "" && h.name != f.Name && h.name != backslashed(f.Name)) {
			return nil
		}
	}
	return headers
}

// backslashed is name as a RAR made on Windows stores it.
func backslashed(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '/' {
			b[i] = '\\'
		}
	}
	return string(b)
}
