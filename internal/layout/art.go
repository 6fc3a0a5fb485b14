package layout

import (
	"path"
	"strings"
)

// IsSidecarName reports whether an image named name, beside archives, is
// series art rather than a book: cover, folder, poster or series with any
// extension, in any case (the names Komga, Kavita, Plex and Kodi use).
func IsSidecarName(name string) bool {
	switch strings.ToLower(strings.TrimSuffix(name, path.Ext(name))) {
	case "cover", "folder", "poster", "series":
		return true
	}
	return false
}

// ArtFolders are the folders whose sidecar art stands for the book at rel,
// nearest first: the book's own folder and, while that folder only names a
// part of a series ("One Piece/Volume 01"), the folders above it, up to the
// first that names the series. The library root is never one: art there
// would stand for every series named by a file name at the root. A folder
// book's rel ends in '/'.
func ArtFolders(rel string) []string {
	var out []string
	for dir := path.Dir(strings.TrimSuffix(rel, "/")); dir != "." && dir != "/"; dir = path.Dir(dir) {
		out = append(out, dir)
		if _, _, part := folderName(path.Base(dir)); !part {
			break
		}
	}
	return out
}

// SkipName is true for names a library never indexes, at any depth:
// dot-files and dot-folders (.bindery-trash among them) and the metadata
// folders NAS systems and macOS sprinkle everywhere. The scan skips them,
// and the watcher never reacts to them.
func SkipName(name string) bool {
	switch name {
	case "@eaDir", "__MACOSX", "#recycle", "#snapshot", "Thumbs.db":
		return true
	}
	return strings.HasPrefix(name, ".")
}
