package trash

import (
	"os"
	"path"

	"github.com/bindery-nas/bindery/internal/store"
)

// moveToTrash renames rel to trashRel inside the same library root (so on
// the same file system) and syncs both folders, so that after a crash the
// file is in exactly one of the two places. err is the rename's; once the
// file has moved, a failed sync only adds a note.
func moveToTrash(root *os.Root, rel, trashRel string) (note string, err error) {
	if err := root.MkdirAll(path.Dir(trashRel), 0o755); err != nil {
		return "", err
	}
	if err := root.Rename(rel, trashRel); err != nil {
		return "", err
	}
	return syncNote(root, path.Dir(rel), path.Dir(trashRel)), nil
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

func syncDirs(root *os.Root, dirs ...string) error {
	for _, d := range dirs {
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

// trashed reports that an earlier attempt of the job already moved f: it
// is gone from its path and a file of its planned size and mtime is at its
// place in the job's trash.
func trashed(root *os.Root, f store.PlanFile, trashRel string) bool {
	if _, err := root.Lstat(f.RelativePath); err == nil {
		return false
	}
	fi, err := root.Lstat(trashRel)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == f.SizeBytes && fi.ModTime().UnixNano() == f.MtimeNS
}
