package archive

import (
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/bindery-nas/bindery/protocol"
)

// rardecode refuses some RAR5 headers whole, e.g. a file header whose only
// extra record is a file encryption record it cannot use, where bsdtar
// and lsar skip what they do not need. rar5Walk reads the block headers
// of one volume itself (RAR's technote: CRC32, size, then the header,
// with variable-length integers), checks each header's CRC and hands it
// to visit; rarCRCs and the listing fallback (rar5Listing) both build on
// it, so that the archive's index does not depend on rardecode accepting
// a record it could skip.

// rar5Header is one block header: its type and flags, the size of the
// data after it, its fields past the common ones (body) and its extra
// area (the last extraSize bytes of body).
type rar5Header struct {
	typ, flags, data uint64
	body, extra      []byte
}

// rar5Walk visits every block header of the RAR5 archive r (size bytes)
// until the end-of-archive block (ended), the end of the file or visit
// returning false. A header that cannot be read, fails its CRC or points past the
// end of the file is archive_corrupt.
func rar5Walk(r io.ReaderAt, size int64, visit func(h rar5Header) bool) (ended bool, err error) {
	buf := make([]byte, 4+binary.MaxVarintLen64)
	for off := int64(len(magicRar5)); off < size; {
		n, _ := r.ReadAt(buf, off)
		if n < 5 {
			return false, codedf(protocol.ErrArchiveCorrupt, "rar5: the file ends inside a block header at %d", off)
		}
		hsize, k := rar5Vint(buf[4:n])
		if k == 0 || hsize == 0 || hsize > maxRarHeader {
			return false, codedf(protocol.ErrArchiveCorrupt, "rar5: bad header size at %d", off)
		}
		b := make([]byte, k+int(hsize))
		if n, _ := r.ReadAt(b, off+4); n < len(b) {
			return false, codedf(protocol.ErrArchiveCorrupt, "rar5: the file ends inside a block header at %d", off)
		}
		if crc32.ChecksumIEEE(b) != binary.LittleEndian.Uint32(buf) {
			return false, codedf(protocol.ErrArchiveCorrupt, "rar5: header CRC mismatch at %d", off)
		}
		h, ok := rar5Block(b[k:])
		next := off + 4 + int64(len(b)) + int64(h.data)
		if !ok || h.data > uint64(size) || next > size {
			return false, codedf(protocol.ErrArchiveCorrupt, "rar5: a block at %d runs past the end of the file", off)
		}
		if h.typ == rar5TypeEnd {
			return true, nil
		}
		if !visit(h) {
			return false, nil
		}
		off = next
	}
	return false, nil
}

// rar5Block splits a header into its type, flags, data size, body and
// extra area.
func rar5Block(b []byte) (h rar5Header, ok bool) {
	f := rar5Fields{b: b, ok: true}
	h.typ, h.flags = f.vint(), f.vint()
	extra := uint64(0)
	if h.flags&rar5HasExtra != 0 {
		extra = f.vint()
	}
	if h.flags&rar5HasData != 0 {
		h.data = f.vint()
	}
	if !f.ok || extra > uint64(len(f.b)) {
		return h, false
	}
	h.body, h.extra = f.b, f.b[uint64(len(f.b))-extra:]
	return h, true
}

// rar5FileEncryption is the extra record type of a file's encryption
// parameters.
const rar5FileEncryption = 1

// rar5Encrypted reports whether an extra area holds a file encryption
// record: records of (size, type, data), size counting type and data.
func rar5Encrypted(extra []byte) bool {
	for len(extra) > 0 {
		size, n := rar5Vint(extra)
		if n == 0 || size == 0 || size > uint64(len(extra)-n) {
			return false
		}
		if typ, m := rar5Vint(extra[n:]); m > 0 && typ == rar5FileEncryption {
			return true
		}
		extra = extra[n+int(size):]
	}
	return false
}
