package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nwaples/rardecode/v2"

	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/protocol"
)

// VolumeRole is a RAR file's place in a volume set, as its main header
// says.
type VolumeRole int

const (
	// NotVolume: not a RAR archive, or one complete in itself.
	NotVolume VolumeRole = iota
	// FirstVolume starts a set: it is the book.
	FirstVolume
	// LaterVolume continues a set: it is never a book of its own.
	LaterVolume
	// SomeVolume is a volume whose header does not say which (RAR 2.x
	// sets the first-volume flag nowhere): its name decides.
	SomeVolume
)

// openLeaf opens a file the reader found by listing a folder: never
// through a symlink swapped in since, never blocking on a FIFO.
func openLeaf(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

// volumeHeadLen is enough for the RAR4 or RAR5 main header's flags.
const volumeHeadLen = 64

var magicRar5 = []byte("Rar!\x1a\x07\x01\x00")

// ReadVolumeRole reads the main header of the file at path, never through
// a symlink. A file it cannot read is NotVolume: opening it reports why.
func ReadVolumeRole(path string) VolumeRole {
	f, err := openLeaf(path)
	if err != nil {
		return NotVolume
	}
	defer f.Close()
	head := make([]byte, volumeHeadLen)
	n, _ := io.ReadFull(f, head)
	return volumeRoleOf(head[:n])
}

// volumeRoleOf reads the volume flags of the main header that follows the
// RAR signature: RAR4 MHD_VOLUME (0x0001) and MHD_FIRSTVOLUME (0x0100);
// RAR5 archive flags "volume" (0x0001) and "volume number present"
// (0x0002, set on every volume but the first).
func volumeRoleOf(head []byte) VolumeRole {
	switch {
	case bytes.HasPrefix(head, magicRar5):
		return rar5VolumeRole(head[len(magicRar5):])
	case bytes.HasPrefix(head, magicRar) && len(head) >= 12 && head[6] == 0 && head[9] == 0x73:
		flags := uint16(head[10]) | uint16(head[11])<<8
		switch {
		case flags&0x0001 == 0:
			return NotVolume
		case flags&0x0100 != 0:
			return FirstVolume
		}
		return SomeVolume
	}
	return NotVolume
}

func rar5VolumeRole(b []byte) VolumeRole {
	if len(b) < 4 {
		return NotVolume
	}
	b = b[4:] // header CRC32
	var v [4]uint64
	for i := range v[:3] { // size, type, flags
		if v[i], b = uvarint(b); b == nil {
			return NotVolume
		}
	}
	if v[1] != 1 { // not the main header
		return NotVolume
	}
	for _, present := range []bool{v[2]&0x1 != 0, v[2]&0x2 != 0} { // extra size, data size
		if present {
			if _, b = uvarint(b); b == nil {
				return NotVolume
			}
		}
	}
	flags, b := uvarint(b)
	switch {
	case b == nil, flags&0x1 == 0:
		return NotVolume
	case flags&0x2 != 0:
		return LaterVolume
	}
	return FirstVolume
}

// uvarint reads a RAR5 variable-length integer; rest is nil when b ends
// before it does.
func uvarint(b []byte) (v uint64, rest []byte) {
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, b[i+1:]
		}
	}
	return 0, nil
}

// openVolumeSet opens the RAR at dir/name, a volume by its header. The
// first volume is the book: rardecode reads its entries across the later
// volumes, which it opens by name through a file system that serves only
// the names of this set, beside it, never through a symlink. A later
// volume opened on its own is archive_incomplete, pointing at its first.
func openVolumeSet(dir, name string, src io.ReaderAt, size int64, role VolumeRole) (Archive, error) {
	naming, first := layout.FirstVolume(name)
	if role == LaterVolume || (role == SomeVolume && !first) {
		if firstName, n, ok := layout.LaterVolume(name); ok {
			return nil, codedf(protocol.ErrArchiveIncomplete, "volume %d of a multi-volume archive: its book is the first volume, %s", n, firstName)
		}
		return nil, codedf(protocol.ErrArchiveIncomplete, "a later volume of a multi-volume archive: its book is the first volume")
	}
	if err := rar4Truncated(src, size); err != nil {
		return nil, err
	}
	fsys := &volumeFS{dir: dir, first: name, src: src, size: size, naming: naming, named: first}
	return openRar(name, fsys, src, size)
}

// volumeFS serves the volumes of one set to rardecode.
type volumeFS struct {
	dir, first string
	src        io.ReaderAt
	size       int64
	naming     layout.VolumeNaming
	named      bool
	// absent is the first volume of the set rardecode asked for that is
	// not there, and absentNum its number (0: none was absent).
	absent    string
	absentNum int
}

func (v *volumeFS) Open(name string) (fs.File, error) {
	if name == v.first {
		return &sectionFile{SectionReader: io.NewSectionReader(v.src, 0, v.size)}, nil
	}
	if strings.ContainsAny(name, `/\`) || !v.named || v.naming.Number(name) < 2 {
		return nil, &missingVolume{name: name, err: fs.ErrNotExist}
	}
	f, err := openLeaf(filepath.Join(v.dir, name))
	if err != nil {
		if n := v.naming.Number(name); v.absentNum == 0 && errors.Is(err, fs.ErrNotExist) {
			v.absent, v.absentNum = name, n
		}
		return nil, &missingVolume{name: name, err: err}
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &missingVolume{name: name, err: errors.Join(err, errors.New("not a regular file"))}
	}
	return f, nil
}

// missingVolume is a volume the set needs that could not be opened. It
// matches fs.ErrNotExist when the file is absent, which tells rardecode
// to try the other naming scheme.
type missingVolume struct {
	name  string
	alone bool // the archive was given without its folder
	err   error
}

func (m *missingVolume) Error() string {
	if m.alone {
		return "a multi-volume archive read without its other volumes"
	}
	if errors.Is(m.err, fs.ErrNotExist) {
		return fmt.Sprintf("volume %s is missing", m.name)
	}
	return fmt.Sprintf("volume %s is unreadable: %v", m.name, m.err)
}

func (m *missingVolume) Unwrap() error { return m.err }

// gap reports a volume missing from the middle or end of a set whose
// volumes do not say whether another follows: RAR 2.x writes no end block,
// so rardecode takes an absent next volume for the end of the archive. The
// set is incomplete when an entry was cut off there (err is rardecode's
// unexpected end), or when a later volume of the set is in the folder. A
// set that ends cleanly at its last volume asks for one more, absent: no
// gap. Nil when nothing is missing.
func (v *volumeFS) gap(err error, what string) error {
	if v.absentNum == 0 {
		return nil
	}
	incomplete := codedf(protocol.ErrArchiveIncomplete, "%s: volume %s is missing", what, v.absent)
	if errors.Is(err, rardecode.ErrUnexpectedArcEnd) || errors.Is(err, io.ErrUnexpectedEOF) {
		return incomplete
	}
	if err != nil {
		return nil
	}
	ents, rerr := os.ReadDir(v.dir)
	if rerr != nil {
		return nil
	}
	for _, e := range ents {
		if v.naming.Number(e.Name()) > v.absentNum {
			return incomplete
		}
	}
	return nil
}
