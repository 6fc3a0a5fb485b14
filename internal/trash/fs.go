package trash

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
)

// ident is a file's identity and state on disk. Two paths with the same
// dev and ino are one file; a write, chmod, link or rename changes ctime,
// so an equal ident means the file was not touched in between.
type ident struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

func identOf(fi fs.FileInfo) (ident, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ident{}, false
	}
	return ident{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano(),
		ctime: st.Ctim.Nano()}, true
}

// sameFile reports whether two idents name one file.
func (a ident) sameFile(b ident) bool { return a.dev == b.dev && a.ino == b.ino }

// lstatIdent is the ident of the entry at rel, not following a symlink;
// ok is false when there is none or it is not a regular file.
func lstatIdent(root *os.Root, rel string) (ident, bool) {
	fi, err := root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return ident{}, false
	}
	return identOf(fi)
}

// fstatIdent is the ident of an open file.
func fstatIdent(f *os.File) (ident, bool) {
	fi, err := f.Stat()
	if err != nil {
		return ident{}, false
	}
	return identOf(fi)
}

// renameNoReplace moves from to to inside root and fails with fs.ErrExist
// when to exists: renameat2(RENAME_NOREPLACE) on the two parent folders,
// opened through root so that neither path can leave the library. The last
// component is never followed: a symlink put at from moves as a symlink.
// On a file system without RENAME_NOREPLACE it links to, then unlinks from
// (a crash in between leaves one file under both names, which the next run
// settles); where hard links fail too, the move fails and nothing moves.
func renameNoReplace(root *os.Root, from, to string) error {
	fd, err := root.Open(path.Dir(from))
	if err != nil {
		return err
	}
	defer fd.Close()
	td, err := root.Open(path.Dir(to))
	if err != nil {
		return err
	}
	defer td.Close()
	ff, tf, fb, tb := int(fd.Fd()), int(td.Fd()), path.Base(from), path.Base(to)
	err = renameat2(ff, fb, tf, tb, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		if err = unix.Linkat(ff, fb, tf, tb, 0); err == nil {
			err = unix.Unlinkat(ff, fb, 0)
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// renameat2 is unix.Renameat2; a test stands in a file system without
// RENAME_NOREPLACE.
var renameat2 = unix.Renameat2

// moveToTrash moves rel to trashRel inside the same library root (so on
// the same file system), never replacing anything at trashRel. made holds
// the trash folders this run already made, so that a folder costs one
// mkdir, not one per path component per copy.
func moveToTrash(root *os.Root, made map[string]bool, rel, trashRel string) error {
	if err := mkdirCached(root, made, path.Dir(trashRel)); err != nil {
		return err
	}
	return renameNoReplace(root, rel, trashRel)
}

func mkdirCached(root *os.Root, made map[string]bool, dir string) error {
	if made[dir] {
		return nil
	}
	var err error
	if made[path.Dir(dir)] {
		if err = root.Mkdir(dir, 0o755); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	} else if err = root.MkdirAll(dir, 0o755); err == nil {
		for d := path.Dir(dir); d != "." && d != "/"; d = path.Dir(d) {
			made[d] = true
		}
	}
	if err == nil {
		made[dir] = true
	}
	return err
}

// unlink removes rel and syncs its folder.
func unlink(root *os.Root, rel string) (note string, err error) {
	if err := root.Remove(rel); err != nil {
		return "", err
	}
	return syncNote(root, path.Dir(rel)), nil
}

func syncNote(root *os.Root, dirs ...string) string {
	if err := syncDirs(root, dirs...); err != nil {
		return "moved, but the folder sync failed: " + err.Error()
	}
	return ""
}

// syncDirs fsyncs each folder once, so that after a crash a moved file is
// in exactly one of its two places.
func syncDirs(root *os.Root, dirs ...string) error {
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		f, err := root.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
