//go:build linux

package hashing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/bindery-nas/bindery/internal/pathsafe"
)

// libRoot opens files confined to one library folder.
//
// Strategy: openat2 with RESOLVE_BENEATH resolves the relative path inside
// the kernel, relative to a descriptor of the library folder, refusing any
// step (.., symlink) that leaves it: one system call per file instead of an
// lstat per path component (pathsafe.Resolve), which doubled the cost of a
// small file. The kernel also refuses absolute symlinks, even ones that land
// back inside the library; for those (EXDEV) and on kernels without openat2
// (ENOSYS) the file is resolved with pathsafe, whose verdict is the same.
type libRoot struct {
	path string
	dir  *os.File // O_PATH descriptor of path
}

func openLibRoot(path string) (*libRoot, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open library %s: %w", path, err)
	}
	return &libRoot{path: path, dir: os.NewFile(uintptr(fd), path)}, nil
}

func (l *libRoot) Close() error { return l.dir.Close() }

// open opens rel for reading, confined to the library, and returns its
// stat; it refuses what is not a regular file (ErrNotRegular). The file is
// an *os.File, which may be read on other goroutines than the one that
// closes it (an archive's decoders do).
func (l *libRoot) open(rel string) (file, os.FileInfo, error) {
	return l.openAs(rel, func(fd int) file { return os.NewFile(uintptr(fd), filepath.Join(l.path, rel)) })
}

// openOwned is open for a file that only its opener reads and closes, one
// step after the other (a partial digest, a small file read whole): the
// bare descriptor (fdFile) spares it the *os.File.
func (l *libRoot) openOwned(rel string) (file, os.FileInfo, error) {
	return l.openAs(rel, func(fd int) file { return &fdFile{fd: fd, root: l.path, rel: rel} })
}

func (l *libRoot) openAs(rel string, wrap func(fd int) file) (file, os.FileInfo, error) {
	if _, err := pathsafe.Lexical(l.path, rel); err != nil {
		return nil, nil, err
	}
	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(int(l.dir.Fd()), rel, how)
	switch {
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOSYS):
		p, err := pathsafe.Resolve(l.path, rel)
		if err != nil {
			return nil, nil, err
		}
		return openRegular(p)
	case err != nil:
		return nil, nil, &os.PathError{Op: "open", Path: filepath.Join(l.path, rel), Err: err}
	}
	return keepRegular(wrap(fd))
}
