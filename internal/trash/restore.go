package trash

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// restore moves a trashed copy back to its path. It must still be the
// file the delete job trashed (size, mtime, digest), and its path must be
// free: the hard link that puts it back fails rather than replace a file
// that appeared there since, and the trash copy then stays.
func (r *run) restore(ctx context.Context, f store.PlanFile) error {
	root := r.roots[f.LibraryID]
	trashRel := r.trashPath(f)
	if isBack(root, f, trashRel) { // moved back by an earlier attempt of this job
		return r.record(f, protocol.OutcomeRestored, "", "")
	}
	inTrash := f
	inTrash.RelativePath = trashRel
	_, v := verify(ctx, root, inTrash)
	if err := ctx.Err(); err != nil {
		return err // a read cut short by a cancel says nothing about the file
	}
	if v != nil {
		return r.record(f, v.outcome, v.message, "")
	}
	conflict := func() error {
		return r.record(f, protocol.OutcomeRestoreConflict, f.RelativePath+" is taken; the copy stays at "+trashRel, trashRel)
	}
	if _, err := root.Lstat(f.RelativePath); err == nil {
		return conflict()
	}
	note, err := moveBack(root, trashRel, f.RelativePath)
	if errors.Is(err, fs.ErrExist) {
		return conflict()
	}
	return r.finish(f, protocol.OutcomeRestored, note, "", err)
}

// moveBack puts trashRel back at rel without ever replacing a file there:
// a hard link, then the trash name removed. Where the file system has no
// hard links, a rename after the check that rel is free.
func moveBack(root *os.Root, trashRel, rel string) (note string, err error) {
	if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return "", err
	}
	switch err := root.Link(trashRel, rel); {
	case err == nil:
		if err := root.Remove(trashRel); err != nil {
			return "back in place, but the trash copy stays: " + err.Error(), nil
		}
	case errors.Is(err, fs.ErrExist):
		return "", err
	default:
		if err := root.Rename(trashRel, rel); err != nil {
			return "", err
		}
	}
	return syncNote(root, path.Dir(rel), path.Dir(trashRel)), nil
}

// isBack reports that f is at its path as trashed and gone from the trash.
func isBack(root *os.Root, f store.PlanFile, trashRel string) bool {
	if _, err := root.Lstat(trashRel); err == nil {
		return false
	}
	fi, err := root.Lstat(f.RelativePath)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == f.SizeBytes && fi.ModTime().UnixNano() == f.MtimeNS
}
