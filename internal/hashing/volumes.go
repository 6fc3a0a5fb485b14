package hashing

import (
	"context"
	"os"
	"path"

	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/protocol"
)

// hashVolumes hashes a multi-volume RAR book, rel being its first volume:
// the volumes the scanner counted (the later ones named as the first's set
// among the regular files of its folder) stream into one hasher in volume
// order, so two copies of a set are one duplicate group and a single
// volume never equals a book. The outcome's size and mtime are the sum and
// the newest of the volumes', which the digest is stored against: if the
// set changed since the scan, the row no longer matches and stays due.
func (r *run) hashVolumes(ctx context.Context, o outcome, root *libRoot, rel string) (outcome, bool) {
	dir, first := path.Split(rel)
	naming, ok := layout.FirstVolume(first)
	if !ok {
		o.err = protocol.Errorf(protocol.ErrArchiveIncomplete, "%s is not named as a first volume", first)
		return o, true
	}
	names, err := listRegular(root.path, dir)
	if err != nil {
		o.err = fileError(err)
		return o, true
	}
	h := r.newHasher(true)
	for _, name := range append([]string{first}, naming.Set(names)...) {
		f, fi, err := root.open(dir + name)
		if err != nil {
			o.err = fileError(err)
			return o, true
		}
		n, err := copyHashPool(ctx, h, f, r.budget.take(ctx), &bigBufPool)
		changed := false
		if err == nil {
			changed, err = r.changedSince(f, fi, n)
		}
		f.Close()
		switch {
		case ctx.Err() != nil:
			return o, false
		case err != nil:
			o.err = fileError(err)
			return o, true
		case changed:
			o.changed = true
			return o, true
		}
		o.size += fi.Size()
		o.mtimeNs = max(o.mtimeNs, fi.ModTime().UnixNano())
	}
	o.sum = h.Sum(nil)
	return o, true
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
