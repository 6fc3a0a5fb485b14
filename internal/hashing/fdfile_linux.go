//go:build linux

package hashing

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// fdFile is a file libRoot opened, read with read(2) and pread(2) on its
// descriptor. Wrapping the descriptor in an *os.File costs every file two
// system calls more (os.NewFile asks for the descriptor's flags and, since
// it is non-blocking so that opening a FIFO never waits, tries to register
// it with the network poller, which refuses a regular file) and a
// finalizer: in a warm hash job of 100,000 small files, os.NewFile took
// more of the open than openat2 itself.
//
// It has none of *os.File's locking, so it is only for a file that one
// goroutine at a time reads and then closes (libRoot.openOwned). A read
// racing a Close on another goroutine could read from a descriptor the
// next open has reused: an archive's decoders may still be reading on
// their own goroutines when the caller closes, so page digests keep the
// *os.File.
type fdFile struct {
	fd        int
	root, rel string // the library's path and the file's, joined only for a name
}

var _ file = (*fdFile)(nil)

func (f *fdFile) Name() string { return filepath.Join(f.root, f.rel) }

func (f *fdFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := ignoringEINTR(func() (int, error) { return unix.Read(f.fd, p) })
	switch {
	case err != nil:
		return 0, f.wrap("read", err)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// ReadAt reads len(p) bytes from off, as io.ReaderAt asks: a short read
// only at the end of the file, with io.EOF.
func (f *fdFile) ReadAt(p []byte, off int64) (int, error) {
	read := 0
	for read < len(p) {
		n, err := ignoringEINTR(func() (int, error) { return unix.Pread(f.fd, p[read:], off+int64(read)) })
		if err != nil {
			return read, f.wrap("read", err)
		}
		if n == 0 {
			return read, io.EOF
		}
		read += n
	}
	return read, nil
}

func (f *fdFile) Stat() (os.FileInfo, error) {
	var st unix.Stat_t
	if _, err := ignoringEINTR(func() (int, error) { return 0, unix.Fstat(f.fd, &st) }); err != nil {
		return nil, f.wrap("stat", err)
	}
	return &statInfo{name: filepath.Base(f.rel), st: st}, nil
}

func (f *fdFile) Close() error {
	if f.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(f.fd) // never retried: the descriptor is gone even on EINTR
	f.fd = -1
	if err != nil {
		return f.wrap("close", err)
	}
	return nil
}

func (f *fdFile) wrap(op string, err error) error {
	return &os.PathError{Op: op, Path: f.Name(), Err: err}
}

func ignoringEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if err != unix.EINTR {
			return n, err
		}
	}
}

// statInfo is an fs.FileInfo from fstat(2): size, mtime, the file's type
// and its permission bits.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.st }

func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
