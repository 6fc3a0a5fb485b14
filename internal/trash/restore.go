package trash

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"syscall"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// restore moves a trashed copy back to its path. It must still be the
// file the delete job trashed (size, mtime, digest), and its path must be
// free: the no-replace move that puts it back fails rather than replace a
// file that appeared there since, and the trash copy then stays
// (restore_conflict). Where the file system can neither rename without
// replacing nor hard-link, nothing moves either.
func (r *run) restore(ctx context.Context, f model.PlanFile) error {
	root := r.roots[f.LibraryID]
	trashRel := r.trashPath(f)
	t, inTrash := lstatIdent(root, trashRel)
	p, atPath := lstatIdent(root, f.RelativePath)
	switch {
	case inTrash && atPath && t.sameFile(p):
		// A link-then-unlink move back cut in two: finish it.
		if err := root.Remove(trashRel); err != nil {
			return r.record(ctx, result(f, protocol.OutcomeIOError, err.Error(), trashRel))
		}
		return r.record(ctx, result(f, protocol.OutcomeRestored, "", ""))
	case !inTrash && atPath && p.size == f.SizeBytes && p.mtime == f.MtimeNS:
		return r.record(ctx, result(f, protocol.OutcomeRestored, "", "")) // moved back by an earlier attempt
	}
	inTrashCopy := f
	inTrashCopy.RelativePath = trashRel
	h, id, v := verify(ctx, root, inTrashCopy)
	defer closeFile(h)
	if err := ctx.Err(); err != nil {
		return err // a read cut short by a cancel says nothing about the file
	}
	if v != nil {
		return r.record(ctx, result(f, v.outcome, v.message, ""))
	}
	if err := root.MkdirAll(path.Dir(f.RelativePath), 0o755); err != nil {
		return r.record(ctx, result(f, protocol.OutcomeIOError, err.Error(), trashRel))
	}
	err := renameNoReplace(root, trashRel, f.RelativePath)
	switch {
	case errors.Is(err, fs.ErrExist):
		return r.record(ctx, result(f, protocol.OutcomeRestoreConflict, f.RelativePath+" is taken; the copy stays at "+trashRel, trashRel))
	case errors.Is(err, syscall.EROFS):
		if rerr := r.record(ctx, result(f, protocol.OutcomeReadOnly, err.Error(), trashRel)); rerr != nil {
			return rerr
		}
		return protocol.Errorf(protocol.ErrReadOnlyFS, "library %d is mounted read-only: %v", f.LibraryID, err)
	case err != nil:
		return r.record(ctx, result(f, protocol.OutcomeRestoreConflict, "it cannot be moved back without risk of replacing a file ("+
			err.Error()+"); the copy stays at "+trashRel, trashRel))
	}
	if back, ok := lstatIdent(root, f.RelativePath); !ok || !back.sameFile(id) {
		return r.record(ctx, r.putBack(ctx, root, inTrashCopy, f.RelativePath, protocol.OutcomeChanged, "the trash copy was replaced as it moved back"))
	}
	return r.record(ctx, result(f, protocol.OutcomeRestored, syncNote(root, path.Dir(f.RelativePath), path.Dir(trashRel)), ""))
}
