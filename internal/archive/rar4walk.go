package archive

import (
	"encoding/binary"
	"io"

	"github.com/bindery-nas/bindery/protocol"
)

// rardecode lists a RAR 1.5–4.x archive by seeking from block to block,
// and takes a file that ends inside an entry's packed data for the end of
// the archive: a download cut short lists every entry and reads its pages
// as if nothing were wrong (RAR5 it does report). rar4Truncated walks the
// same block headers (RAR's technote: CRC, type, flags, size, and the
// data size of a long block) and reports a block that runs past the end
// of the file, as unrar and lsar do ("unexpected end of archive").

const (
	rar4BlockLen    = 7
	rar4LongBlock   = 0x8000
	rar4LargeFile   = 0x0100 // a file header with 64-bit sizes
	rar4HeadersLock = 0x0080 // the main header says the headers are encrypted
	rar4TypeMain    = 0x73
	rar4TypeFile    = 0x74
	rar4TypeSub     = 0x7a
	rar4TypeEnd     = 0x7b
)

// rar4Truncated returns archive_corrupt when a block of the RAR4 archive r
// (size bytes) runs past its end, nil otherwise (RAR5, encrypted headers
// and malformed headers are rardecode's to judge).
func rar4Truncated(r io.ReaderAt, size int64) error {
	var h [rar4BlockLen + 4 + 25 + 4]byte // up to a file header's high pack size
	for off := int64(0); off < size; {
		n, err := r.ReadAt(h[:], off)
		if n < rar4BlockLen {
			if err != nil && err != io.EOF {
				return nil // an I/O error: the listing reports it
			}
			return codedf(protocol.ErrArchiveCorrupt, "rar: the file ends inside a block header at %d (truncated)", off)
		}
		typ, flags, hsize := h[2], binary.LittleEndian.Uint16(h[3:]), int64(binary.LittleEndian.Uint16(h[5:]))
		if off == 0 && string(h[:rar4BlockLen]) != string(magicRar)+"\x00" {
			return nil
		}
		if hsize < rar4BlockLen {
			return nil
		}
		data := int64(0)
		if flags&rar4LongBlock != 0 {
			if n < rar4BlockLen+4 || hsize < rar4BlockLen+4 {
				return nil
			}
			data = int64(binary.LittleEndian.Uint32(h[7:]))
			if (typ == rar4TypeFile || typ == rar4TypeSub) && flags&rar4LargeFile != 0 && n >= len(h) && hsize >= int64(len(h)) {
				data |= int64(binary.LittleEndian.Uint32(h[32:])) << 32
			}
		}
		switch {
		case typ == rar4TypeMain && flags&rar4HeadersLock != 0:
			return nil // the next headers are encrypted
		case typ == rar4TypeEnd:
			return nil
		case off+hsize+data > size || data < 0:
			return codedf(protocol.ErrArchiveCorrupt, "rar: a block at %d needs %d bytes, the file ends after %d (truncated)", off, hsize+data, size-off)
		}
		off += hsize + data
	}
	return nil
}
