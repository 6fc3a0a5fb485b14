package hashing

import (
	"context"
	"errors"
	"hash"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/protocol"
)

// ErrChanged is returned when a file changed while it was read: its
// digest describes no stable version.
var ErrChanged = errors.New("changed while read")

// volumeReader streams the volumes of a multi-volume RAR book into one
// hasher, in volume order.
type volumeReader struct {
	open   func(name string) (file, os.FileInfo, error)
	check  func(f file, fi os.FileInfo, n int64) (bool, error)
	before func(n int64) error
}

// hash returns the volumes' summed size and newest mtime, the figures the
// scanner gives the book's row; ErrChanged when one moved while read.
func (v volumeReader) hash(ctx context.Context, h hash.Hash, names []string) (size, mtimeNS int64, err error) {
	for _, name := range names {
		f, fi, err := v.open(name)
		if err != nil {
			return 0, 0, err
		}
		n, err := copyHashPool(ctx, h, f, v.before, &bigBufPool)
		changed := false
		if err == nil {
			changed, err = v.check(f, fi, n)
		}
		f.Close()
		switch {
		case err != nil:
			return 0, 0, err
		case changed:
			return 0, 0, ErrChanged
		}
		size += fi.Size()
		mtimeNS = max(mtimeNS, fi.ModTime().UnixNano())
	}
	return size, mtimeNS, nil
}

// volumeNames lists the book whose first volume is first: it, then the
// later volumes the scanner counts (named as its set among the regular
// files of the same folder). A split zip's book is its last part
// (Book.zip): its earlier parts (Book.z01 …) come first, in the order
// they hold the archive.
func volumeNames(first string, list func() ([]string, error)) ([]string, error) {
	naming, ok := layout.FirstVolume(first)
	if !ok {
		names, err := list()
		if err != nil {
			return nil, err
		}
		if parts, ok := layout.SplitZipParts(first, names); ok && len(parts) > 0 {
			return append(parts, first), nil
		}
		return nil, protocol.Errorf(protocol.ErrArchiveIncomplete, "%s is not named as a first volume", first)
	}
	names, err := list()
	if err != nil {
		return nil, err
	}
	return append([]string{first}, naming.Set(names)...), nil
}

// hashVolumes hashes a multi-volume RAR book, rel being its first volume,
// so that two copies of a set are one duplicate group and a single volume
// never equals a book. The outcome's size and mtime are the sum and the
// newest of the volumes', which the digest is stored against: if the set
// changed since the scan, the row no longer matches and stays due.
func (r *run) hashVolumes(ctx context.Context, o outcome, root *libRoot, rel string) (outcome, bool) {
	dir, first := path.Split(rel)
	names, err := volumeNames(first, func() ([]string, error) { return listRegular(root.path, dir) })
	if err != nil {
		o.err = fileError(err)
		return o, true
	}
	h := r.newHasher(true)
	v := volumeReader{
		open:   func(name string) (file, os.FileInfo, error) { return root.open(dir + name) },
		check:  r.changedSince,
		before: r.budget.take(ctx),
	}
	size, mtime, err := v.hash(ctx, h, names)
	switch {
	case ctx.Err() != nil:
		return o, false
	case errors.Is(err, ErrChanged):
		o.changed = true
	case err != nil:
		o.err = fileError(err)
	default:
		o.sum, o.size, o.mtimeNs = h.Sum(nil), size, mtime
	}
	return o, true
}

// Volumes returns the digest with alg of the multi-volume RAR book whose
// first volume is dir/first (dir already confined to its library), and
// the summed size and newest mtime of its volumes. Volumes are opened
// beside the first, never through a symlink.
func Volumes(ctx context.Context, dir, first string, alg protocol.HashAlgorithm) (sum []byte, size, mtimeNS int64, err error) {
	h, err := newHash(alg)
	if err != nil {
		return nil, 0, 0, err
	}
	names, err := volumeNames(first, func() ([]string, error) { return listRegular(dir, "") })
	if err != nil {
		return nil, 0, 0, err
	}
	v := volumeReader{
		open: func(name string) (file, os.FileInfo, error) {
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
			if err != nil {
				return nil, nil, err
			}
			return keepRegular(f)
		},
		check: changedSince,
	}
	if size, mtimeNS, err = v.hash(ctx, h, names); err != nil {
		return nil, 0, 0, err
	}
	return h.Sum(nil), size, mtimeNS, nil
}

// listRegular names the regular files of the folder rel of the library at
// root (rel "" or ending in '/'), resolved confined to the library.
func listRegular(root, rel string) ([]string, error) {
	dir := root
	if rel != "" {
		p, err := pathsafe.Resolve(root, rel)
		if err != nil {
			return nil, err
		}
		dir = p
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
