package trash

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// purge removes a trash copy for good. Only a regular file with the size
// and mtime it was trashed with is removed: the trash is the library's, and
// whatever else someone put there stays.
func (r *run) purge(f store.PlanFile) error {
	root := r.roots[f.LibraryID]
	trashRel := r.trashPath(f)
	fi, err := root.Lstat(trashRel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return r.record(f, protocol.OutcomeMissing, "not in the trash at "+trashRel, "")
	case err != nil:
		return r.record(f, protocol.OutcomePathViolation, err.Error(), "")
	case !fi.Mode().IsRegular():
		return r.record(f, protocol.OutcomePathViolation, "not a regular file ("+fi.Mode().Type().String()+")", "")
	case fi.Size() != f.SizeBytes || fi.ModTime().UnixNano() != f.MtimeNS:
		return r.record(f, protocol.OutcomeChanged, "the trash copy is not the file that was trashed", trashRel)
	}
	note, err := unlink(root, trashRel)
	return r.finish(f, protocol.OutcomePurged, note, "", err)
}

// trashPath is where the job this restore or purge acts on put f.
func (r *run) trashPath(f store.PlanFile) string { return trashPath(r.plan.TrashJobID.Int64, f) }

// trashPath is where delete job jobID puts f: its path under the job's
// folder of the library's trash.
func trashPath(jobID int64, f store.PlanFile) string {
	return path.Join(protocol.TrashDir, strconv.FormatInt(jobID, 10), f.RelativePath)
}

// pruneTrash removes the folders of a purged job's trash that are left
// empty, deepest first; a folder that still holds anything stays.
func (r *run) pruneTrash(files []store.PlanFile) {
	byLib := map[int64][]string{}
	for _, f := range files {
		for d := path.Dir(r.trashPath(f)); strings.HasPrefix(d, protocol.TrashDir+"/"); d = path.Dir(d) {
			if !slices.Contains(byLib[f.LibraryID], d) {
				byLib[f.LibraryID] = append(byLib[f.LibraryID], d)
			}
		}
	}
	for lib, dirs := range byLib {
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, d := range dirs {
			_ = r.roots[lib].Remove(d) // rmdir: refused while the folder holds anything
		}
	}
}
