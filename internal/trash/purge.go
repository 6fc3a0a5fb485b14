package trash

import (
	"context"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// purge removes a trash copy for good. Only a regular file with the size,
// mtime and digest it was trashed with is removed: the trash is the
// library's, and whatever else someone put there stays.
func (r *run) purge(ctx context.Context, f model.PlanFile) error {
	root := r.roots[f.LibraryID]
	inTrashCopy := f
	inTrashCopy.RelativePath = r.trashPath(f)
	h, _, v := verify(ctx, root, inTrashCopy)
	closeFile(h)
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case v != nil && v.outcome == protocol.OutcomeMissing:
		return r.record(ctx, result(f, protocol.OutcomeMissing, "not in the trash at "+inTrashCopy.RelativePath, ""))
	case v != nil && v.outcome == protocol.OutcomeChanged:
		return r.record(ctx, result(f, protocol.OutcomeChanged, "the trash copy is not the file that was trashed ("+v.message+")", inTrashCopy.RelativePath))
	case v != nil:
		return r.record(ctx, result(f, v.outcome, v.message, ""))
	}
	note, err := unlink(root, inTrashCopy.RelativePath)
	if err != nil {
		return r.record(ctx, result(f, protocol.OutcomeIOError, err.Error(), inTrashCopy.RelativePath))
	}
	return r.record(ctx, result(f, protocol.OutcomePurged, note, ""))
}

// trashPath is where the job this restore or purge acts on put f.
func (r *run) trashPath(f model.PlanFile) string { return trashPath(model.Deref(r.plan.TrashJobID), f) }

// trashPath is where delete job jobID puts f: its path under the job's
// folder of the library's trash.
func trashPath(jobID int64, f model.PlanFile) string {
	return path.Join(protocol.TrashDir, strconv.FormatInt(jobID, 10), f.RelativePath)
}

// pruneTrash removes the folders of a purged job's trash that are left
// empty, deepest first; a folder that still holds anything stays.
func (r *run) pruneTrash() {
	byLib := map[int64][]string{}
	for _, f := range r.files {
		for d := path.Dir(r.trashPath(f)); strings.HasPrefix(d, protocol.TrashDir+"/"); d = path.Dir(d) {
			if !slices.Contains(byLib[f.LibraryID], d) {
				byLib[f.LibraryID] = append(byLib[f.LibraryID], d)
			}
		}
	}
	for lib, dirs := range byLib {
		removeEmpty(r.roots[lib], dirs)
	}
}

// pruneEmpty removes, of the given folders, those inside the trash and
// their parents up to the trash itself, where they are left empty: the
// staging folders of an unlink plan.
func pruneEmpty(root *os.Root, dirs []string) {
	var in []string
	for _, d := range dirs {
		for ; d == protocol.TrashDir || strings.HasPrefix(d, protocol.TrashDir+"/"); d = path.Dir(d) {
			if !slices.Contains(in, d) {
				in = append(in, d)
			}
		}
	}
	removeEmpty(root, in)
}

// removeEmpty removes the folders that are empty, deepest first; a folder
// that still holds anything stays.
func removeEmpty(root *os.Root, dirs []string) {
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range dirs {
		_ = root.Remove(d) // rmdir: refused while the folder holds anything
	}
}
