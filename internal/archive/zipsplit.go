package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bindery-nas/bindery/internal/archive/internal/overlay"
	"github.com/bindery-nas/bindery/protocol"
)

// Split zips (Info-ZIP's `zip -s`, WinZip's "split"): Book.z01, Book.z02 …
// hold the archive's start, Book.zip (or .cbz) its end and the central
// directory, whose end record says which part (disk) it is. Each entry's
// offset is counted from the start of its own part. The book is the .zip:
// its parts are read as one stream, z01 first, and the central directory
// is rewritten with offsets into that stream and appended past its end
// (the original one, inside the last part, is never looked at again), so
// archive/zip reads the set as an ordinary zip.

const (
	zipEndLen      = 22
	zipDirEntryLen = 46
	// zipMaxParts caps the parts of one split zip: .z01 … .z99 is what
	// both writers name; more is a hostile end record.
	zipMaxParts = 100
	// maxSplitDirectory caps the central directory read whole, as the 7z
	// reader caps its header (16 MiB).
	maxSplitDirectory = 16 << 20
)

var (
	magicZipEnd   = []byte("PK\x05\x06")
	magicZipEntry = []byte("PK\x01\x02")
	// magicZip64Locator starts the 20-byte zip64 end locator.
	magicZip64Locator = []byte("PK\x06\x07")
)

// zipEnd is the end of central directory record of one part.
type zipEnd struct {
	disk, dirDisk     uint16
	entries           uint16
	dirSize, dirStart uint32
	// zip64: a zip64 end locator precedes the record, whose fields may
	// then be placeholders. Such a zip is never taken for a split one.
	zip64 bool
}

// readZipEnd finds the end record in the last 64 KiB of r (a comment may
// follow it), or ok=false.
func readZipEnd(r io.ReaderAt, size int64) (zipEnd, bool) {
	n := min(size, zipEndLen+0xffff)
	tail := make([]byte, n)
	if _, err := r.ReadAt(tail, size-n); err != nil && !errors.Is(err, io.EOF) {
		return zipEnd{}, false
	}
	for i := len(tail) - zipEndLen; i >= 0; i-- {
		if !bytes.Equal(tail[i:i+4], magicZipEnd) {
			continue
		}
		b := tail[i:]
		if int(binary.LittleEndian.Uint16(b[20:])) != len(b)-zipEndLen {
			continue // the comment length must reach the end exactly
		}
		if i >= 20 && bytes.Equal(tail[i-20:i-16], magicZip64Locator) {
			return zipEnd{zip64: true}, true
		}
		return zipEnd{
			disk: binary.LittleEndian.Uint16(b[4:]), dirDisk: binary.LittleEndian.Uint16(b[6:]),
			entries: binary.LittleEndian.Uint16(b[10:]), dirSize: binary.LittleEndian.Uint32(b[12:]),
			dirStart: binary.LittleEndian.Uint32(b[16:]),
		}, true
	}
	return zipEnd{}, false
}

// splitZipPart is the name of part n (1-based) of the split zip whose last
// part is named last: Book.z01 for Book.zip, the letter's case kept.
func splitZipPart(last string, n int) string {
	stem := strings.TrimSuffix(last, filepath.Ext(last))
	z := "z"
	if ext := filepath.Ext(last); ext != "" && ext[1] >= 'A' && ext[1] <= 'Z' {
		z = "Z"
	}
	return fmt.Sprintf("%s.%s%02d", stem, z, n)
}

// SplitZipParts returns the names of the earlier parts (Book.z01 …) of the
// split zip dir/name when its end record says it is the last part of one,
// else nil. Only the end record is read.
func SplitZipParts(dir, name string) []string {
	f, err := openLeaf(filepath.Join(dir, name))
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	end, ok := readZipEnd(f, st.Size())
	if !ok || end.disk == 0 || int(end.disk) >= zipMaxParts {
		return nil
	}
	parts := make([]string, end.disk)
	for i := range parts {
		parts[i] = splitZipPart(name, i+1)
	}
	return parts
}

// openSplitZip opens the last part of a split zip (src, size bytes, named
// name in dir) with its earlier parts beside it. ok=false when src is no
// such last part. A part that is absent or unreadable is
// archive_incomplete naming it.
func openSplitZip(dir, name string, src *os.File, size int64) (a Archive, ok bool, err error) {
	end, found := readZipEnd(src, size)
	if !found || end.disk == 0 {
		return nil, false, nil
	}
	if int(end.disk) >= zipMaxParts || end.dirDisk > end.disk {
		return nil, true, codedf(protocol.ErrArchiveCorrupt, "split zip: end record names disk %d of %d", end.dirDisk, end.disk)
	}
	parts := make([]*os.File, 0, end.disk+1)
	closeAll := func() {
		for _, p := range parts {
			p.Close()
		}
	}
	set := &splitStream{}
	for n := 1; n <= int(end.disk); n++ {
		pname := splitZipPart(name, n)
		f, err := openLeaf(filepath.Join(dir, pname))
		var st fs.FileInfo
		if err == nil {
			if st, err = f.Stat(); err == nil && !st.Mode().IsRegular() {
				err = errors.New("not a regular file")
			}
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			closeAll()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, true, codedf(protocol.ErrArchiveIncomplete, "split zip: part %s is missing", pname)
			}
			return nil, true, codedf(protocol.ErrArchiveIncomplete, "split zip: part %s is unreadable: %v", pname, err)
		}
		parts = append(parts, f)
		set.add(f, st.Size())
	}
	set.add(src, size)
	stream, streamSize, err := set.withDirectory(end)
	if err != nil {
		closeAll()
		return nil, true, err
	}
	a, err = openZip(stream, streamSize)
	if err != nil {
		closeAll()
		return nil, true, err
	}
	a.(*zipArchive).parts = parts
	return a, true, nil
}

// splitStream reads parts one after another as one stream.
type splitStream struct {
	parts  []io.ReaderAt
	starts []int64 // starts[i]: where part i begins in the stream
	size   int64
}

func (s *splitStream) add(r io.ReaderAt, size int64) {
	s.parts = append(s.parts, r)
	s.starts = append(s.starts, s.size)
	s.size += size
}

func (s *splitStream) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= s.size {
			return n, io.EOF
		}
		i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > pos }) - 1
		end := s.size
		if i+1 < len(s.starts) {
			end = s.starts[i+1]
		}
		m, err := s.parts[i].ReadAt(p[n:n+int(min(int64(len(p)-n), end-pos))], pos-s.starts[i])
		n += m
		if err != nil && !(errors.Is(err, io.EOF) && pos+int64(m) == end) {
			return n, err
		}
	}
	return n, nil
}

// withDirectory returns the stream followed by the central directory
// rewritten for it: each entry's offset counted from the start of the
// stream, every disk number 0, and an end record pointing at it.
func (s *splitStream) withDirectory(end zipEnd) (io.ReaderAt, int64, error) {
	if int(end.dirDisk) >= len(s.starts) {
		return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: directory on disk %d of %d", end.dirDisk, len(s.starts))
	}
	if end.dirSize == 0xffffffff || end.dirStart == 0xffffffff || end.entries == 0xffff {
		return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: zip64 split archives are not read")
	}
	start := s.starts[end.dirDisk] + int64(end.dirStart)
	if start+int64(end.dirSize) > s.size || end.dirSize > maxSplitDirectory {
		return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: central directory of %d bytes at %d outside the parts", end.dirSize, start)
	}
	dir := make([]byte, end.dirSize, int(end.dirSize)+zipEndLen)
	if _, err := s.ReadAt(dir, start); err != nil {
		return nil, 0, classify(err, "read split zip directory")
	}
	entries := 0
	for off := 0; off < len(dir); entries++ {
		e := dir[off:]
		if len(e) < zipDirEntryLen || !bytes.Equal(e[:4], magicZipEntry) {
			return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: bad central directory entry at %d", off)
		}
		disk, local := binary.LittleEndian.Uint16(e[34:]), binary.LittleEndian.Uint32(e[42:])
		if disk == 0xffff || local == 0xffffffff {
			return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: zip64 split archives are not read")
		}
		if int(disk) >= len(s.starts) {
			return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: entry on disk %d of %d", disk, len(s.starts))
		}
		abs := s.starts[disk] + int64(local)
		if abs > 0xfffffffe {
			return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: zip64 split archives are not read")
		}
		binary.LittleEndian.PutUint16(e[34:], 0)
		binary.LittleEndian.PutUint32(e[42:], uint32(abs))
		off += zipDirEntryLen + int(binary.LittleEndian.Uint16(e[28:])) + int(binary.LittleEndian.Uint16(e[30:])) +
			int(binary.LittleEndian.Uint16(e[32:]))
	}
	if s.size > 0xfffffffe || entries > 0xfffe {
		return nil, 0, codedf(protocol.ErrArchiveCorrupt, "split zip: zip64 split archives are not read")
	}
	rec := make([]byte, zipEndLen)
	copy(rec, magicZipEnd)
	binary.LittleEndian.PutUint16(rec[8:], uint16(entries))
	binary.LittleEndian.PutUint16(rec[10:], uint16(entries))
	binary.LittleEndian.PutUint32(rec[12:], end.dirSize)
	binary.LittleEndian.PutUint32(rec[16:], uint32(s.size))
	tail := append(dir, rec...)
	return overlay.ReaderAt{R: s, Size: s.size, Tail: tail}, s.size + int64(len(tail)), nil
}

// IsSplitZipStart reports whether the file at path starts like the first
// part of a split zip (Book.z01): the spanning signature, then a local
// header. It is never read through a symlink.
func IsSplitZipStart(path string) bool {
	f, err := openLeaf(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [8]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return false
	}
	return bytes.Equal(head[:4], magicZipSpan) && bytes.Equal(head[4:], magicZip)
}
