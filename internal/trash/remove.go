package trash

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// staged is a copy moved into the trash whose outcome waits for the
// group's last keeper check.
type staged struct {
	f        model.PlanFile
	trashRel string
	// id is the copy as it lies in the trash.
	id ident
}

// movedBefore is the outcome of a copy gone from its path: trashed when
// the planned file is in its place in this job's trash (moved by a run
// that left no intent: an older workerd's), else missing.
func (r *run) movedBefore(ctx context.Context, f model.PlanFile) *model.DeleteResult {
	inTrashCopy := f
	inTrashCopy.RelativePath = trashPath(r.job.ID, f)
	h, _, v := verify(ctx, r.roots[f.LibraryID], inTrashCopy)
	closeFile(h)
	if v == nil {
		return ptr(result(f, protocol.OutcomeTrashed, "", inTrashCopy.RelativePath))
	}
	return ptr(result(f, protocol.OutcomeMissing, "not found at "+f.RelativePath, ""))
}

// move renames the verified, still open copy h into the trash and proves
// that what arrived there is h, unchanged; anything else goes back.
func (r *run) move(ctx context.Context, root *os.Root, h *os.File, id ident, f model.PlanFile, trashRel string) (*staged, *model.DeleteResult, error) {
	if now, ok := fstatIdent(h); !ok || now != id {
		return nil, ptr(result(f, protocol.OutcomeChanged, "it changed while it was checked", "")), nil
	}
	if r.made[f.LibraryID] == nil {
		r.made[f.LibraryID] = map[string]bool{}
	}
	err := moveToTrash(root, r.made[f.LibraryID], f.RelativePath, trashRel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Gone from its path: a frozen run of this job that woke up may
		// have moved it, and then it is in the trash already.
		if t, ok := lstatIdent(root, trashRel); !ok || !t.sameFile(id) {
			return nil, ptr(result(f, protocol.OutcomeMissing, "gone from "+f.RelativePath+" before it moved", "")), nil
		}
	case errors.Is(err, syscall.EROFS):
		return nil, ptr(result(f, protocol.OutcomeReadOnly, err.Error(), "")),
			protocol.Errorf(protocol.ErrReadOnlyFS, "library %d is mounted read-only: %v", f.LibraryID, err)
	case err != nil:
		return nil, ptr(result(f, protocol.OutcomeIOError, err.Error(), "")), nil
	}
	if r.x.afterMove != nil {
		r.x.afterMove(f.RelativePath)
	}
	t, tok := lstatIdent(root, trashRel)
	after, aok := fstatIdent(h)
	if !tok || !aok || !t.sameFile(id) || after.size != id.size || after.mtime != id.mtime {
		return nil, ptr(r.putBack(ctx, root, f, trashRel, protocol.OutcomeChanged, "another file took its path as it moved")), nil
	}
	return &staged{f: f, trashRel: trashRel, id: after}, nil, nil
}

// putBack moves what lies at trashRel back to f's path, never replacing
// anything there, and is the outcome o of f. A worker that no longer owns
// the job moves nothing back: the job's new owner settles the file.
func (r *run) putBack(ctx context.Context, root *os.Root, f model.PlanFile, trashRel string, o protocol.DeleteOutcome, why string) model.DeleteResult {
	if err := r.x.dp.CheckDeleteOwner(ctx, r.job); err != nil {
		return result(f, o, why+"; not moved back ("+err.Error()+")", trashRel)
	}
	if err := renameNoReplace(root, trashRel, f.RelativePath); err != nil {
		return result(f, o, why+"; it could not go back ("+err.Error()+") and stays at "+trashRel, trashRel)
	}
	_ = syncDirs(root, path.Dir(f.RelativePath), path.Dir(trashRel))
	return result(f, o, why+"; it was put back", "")
}

// settle ends a group's staged copies: after one more keeper check, they
// are trashed, or (unlink) removed from the trash; if the keeper changed,
// they go back to their paths. The caller syncs the folders and records
// the outcomes.
func (r *run) settle(ctx context.Context, keeper model.PlanFile, kid ident, moved []staged) []model.DeleteResult {
	if len(moved) == 0 {
		return nil
	}
	out := make([]model.DeleteResult, 0, len(moved))
	if r.x.beforeSettle != nil {
		r.x.beforeSettle()
	}
	keeperMsg := r.keeperHolds(keeper, kid)
	unlink := r.plan.Action == protocol.ActionUnlink && r.x.dp.CheckDeleteOwner(ctx, r.job) == nil
	for _, s := range moved {
		root := r.roots[s.f.LibraryID]
		switch cur, ok := lstatIdent(root, s.trashRel); {
		case keeperMsg != "":
			res := r.putBack(ctx, root, s.f, s.trashRel, protocol.OutcomeLastCopy, keeperMsg)
			if res.TrashPath != nil { // it stays in the trash: it is trashed, and restorable
				res.Outcome = protocol.OutcomeTrashed
			}
			out = append(out, res)
		case unlink && ok && cur == s.id:
			if err := root.Remove(s.trashRel); err != nil {
				out = append(out, result(s.f, protocol.OutcomeTrashed, "the unlink failed ("+err.Error()+"); it stays in the trash", s.trashRel))
			} else {
				out = append(out, result(s.f, protocol.OutcomeUnlinked, "", ""))
			}
		case unlink:
			out = append(out, result(s.f, protocol.OutcomeTrashed, "it changed in the trash before the unlink; it stays there", s.trashRel))
		default:
			out = append(out, result(s.f, protocol.OutcomeTrashed, "", s.trashRel))
		}
	}
	return out
}

// keeperHolds is "" while the keeper at its path is still the file its
// hash saw (same device, inode, size, mtime and ctime), else why not.
func (r *run) keeperHolds(keeper model.PlanFile, kid ident) string {
	if cur, ok := lstatIdent(r.roots[keeper.LibraryID], keeper.RelativePath); ok && cur == kid {
		return ""
	}
	return "the keeper " + keeper.RelativePath + " changed or moved after it was verified"
}

// verdict is why a file is not as planned.
type verdict struct {
	outcome protocol.DeleteOutcome
	message string
}

// verify proves that rel is a regular file with the plan's size, mtime and
// content, read from one open file that nothing changed while it was read.
// It returns that file, open (the caller closes it), and its identity.
func verify(ctx context.Context, root *os.Root, f model.PlanFile) (*os.File, ident, *verdict) {
	fi, err := root.Lstat(f.RelativePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ident{}, &verdict{protocol.OutcomeMissing, "not found at " + f.RelativePath}
	case err != nil:
		return nil, ident{}, &verdict{protocol.OutcomePathViolation, err.Error()}
	case !fi.Mode().IsRegular():
		return nil, ident{}, &verdict{protocol.OutcomePathViolation, "not a regular file (" + fi.Mode().Type().String() + ")"}
	case fi.Size() != f.SizeBytes || fi.ModTime().UnixNano() != f.MtimeNS:
		return nil, ident{}, &verdict{protocol.OutcomeChanged, fmt.Sprintf("size %d, mtime %d; the plan saw %d, %d",
			fi.Size(), fi.ModTime().UnixNano(), f.SizeBytes, f.MtimeNS)}
	}
	h, err := root.OpenFile(f.RelativePath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, ident{}, &verdict{protocol.OutcomeIOError, err.Error()}
	}
	pre, _ := identOf(fi)
	before, ok := fstatIdent(h)
	if !ok || !before.sameFile(pre) {
		closeFile(h)
		return nil, ident{}, &verdict{protocol.OutcomeChanged, "it was replaced as it was opened"}
	}
	sum, err := hashing.Reader(ctx, h, f.HashAlgorithm)
	if err != nil {
		closeFile(h)
		return nil, ident{}, &verdict{protocol.OutcomeIOError, err.Error()}
	}
	after, ok := fstatIdent(h)
	if !ok || after != before || !bytesEqual(sum, f.ContentHash) || after.size != f.SizeBytes || after.mtime != f.MtimeNS {
		closeFile(h)
		return nil, ident{}, &verdict{protocol.OutcomeChanged, "its content is not the plan's"}
	}
	return h, after, nil
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func ptr[T any](v T) *T { return &v }
