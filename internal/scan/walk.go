package scan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/protocol"
)

// item is one thing the walk reports, in strictly increasing byte order of
// rel (SQLite's BINARY collation), so that discovery can merge it with the
// rows of library_files read in relative_path order.
type item struct {
	// rel is the '/'-separated path relative to the library root. For an
	// opaque folder and a folder book it ends in '/', and sorts before the
	// pages that follow it.
	rel string
	// opaque marks a folder that could not be read: the rows under it are
	// neither seen nor missing, they are left alone.
	opaque bool
	stat   scanning.FileStat
}

// walker walks a library folder without ever following a symlink out of
// it.
//
// Strategy: each folder is read whole with os.ReadDir and its entries sorted
// by name, with "/" appended to folder names. A folder's subtree is then a
// contiguous block that sorts exactly where "name/" sorts among its
// siblings, so a depth-first walk emits full relative paths in byte order
// without ever sorting more than one folder listing.
type walker struct {
	// root is the library's real path (symlinks resolved).
	root string
	exts map[string]bool
	// dirs counts folders read; errs receives per-path problems.
	dirs int64
	errs func(model.ScanError)
}

type dirEntry struct {
	key string // name, plus "/" for folders
	ent fs.DirEntry
	// wanted: the name has one of the library's extensions; image: a
	// regular file with a page image extension among them; video: one
	// with a video extension, never a page.
	wanted, image, video bool
}

// walk calls fn for every candidate file and every unreadable folder. An
// unreadable root is returned as an error.
func (w *walker) walk(ctx context.Context, fn func(item) error) error {
	ents, err := os.ReadDir(w.root)
	if err != nil {
		return protocol.Wrap(protocol.ErrLibraryMissing, err)
	}
	return w.dir(ctx, "", nil, ents, fn)
}

// folder walks one folder of a scoped scan (rel ends in '/') as the walk of
// its parent would: a folder book is one item, any other folder its
// subtree. A folder that is gone, or is no folder, yields nothing.
func (w *walker) folder(ctx context.Context, rel string, fn func(item) error) error {
	rel = strings.TrimSuffix(rel, "/")
	info, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.IsDir()) {
		return nil
	}
	if err != nil {
		w.errs(model.ScanError{RelativePath: rel + "/", ErrorCode: protocol.ErrIOError, Message: err.Error()})
		return fn(item{rel: rel + "/", opaque: true})
	}
	for _, name := range strings.Split(rel, "/") {
		if skipName(name) {
			return nil
		}
	}
	de := dirEntry{key: path.Base(rel) + "/", ent: fs.FileInfoToDirEntry(info)}
	return w.entry(ctx, rel, de, protocol.RoleBook, fn)
}

// dir walks one folder. self is the folder's own entry (nil for the
// library root), for the signature of a folder book.
func (w *walker) dir(ctx context.Context, rel string, self fs.DirEntry, ents []fs.DirEntry, fn func(item) error) error {
	w.dirs++
	list := make([]dirEntry, 0, len(ents))
	for _, e := range ents {
		if skipName(e.Name()) {
			continue
		}
		if !utf8.ValidString(e.Name()) {
			w.badName(path.Join(rel, e.Name()), e.IsDir())
			continue
		}
		key := e.Name()
		if e.IsDir() {
			key += "/"
		}
		wanted := !e.IsDir() && w.wanted(e.Name())
		image := wanted && e.Type().IsRegular() && archive.IsImageName(e.Name())
		list = append(list, dirEntry{key: key, ent: e, wanted: wanted, image: image, video: wanted && isVideoName(e.Name())})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].key < list[j].key })
	shape := w.shape(rel, list)
	if shape == folderBook {
		return w.folderBook(rel, self, list, fn)
	}
	vols := w.volumeSets(rel, list)
	for _, de := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if set, ok := vols[de.ent.Name()]; ok && !de.ent.IsDir() {
			if set.later {
				continue
			}
			if err := w.volumeBook(ctx, path.Join(rel, de.ent.Name()), de, set, fn); err != nil {
				return err
			}
			continue
		}
		role := protocol.RoleBook
		if shape == besideBooks && de.image && layout.IsSidecarName(de.ent.Name()) {
			role = protocol.RoleSidecar
		}
		if err := w.entry(ctx, path.Join(rel, de.ent.Name()), de, role, fn); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) entry(ctx context.Context, rel string, de dirEntry, role protocol.FileRole, fn func(item) error) error {
	e, abs := de.ent, filepath.Join(w.root, filepath.FromSlash(rel))
	switch t := e.Type(); {
	case t.IsDir():
		ents, err := os.ReadDir(abs)
		if err != nil {
			w.errs(model.ScanError{RelativePath: rel + "/", ErrorCode: protocol.ErrIOError, Message: err.Error()})
			return fn(item{rel: rel + "/", opaque: true})
		}
		return w.dir(ctx, rel, e, ents, fn)
	case t&fs.ModeSymlink != 0:
		return w.symlink(rel, abs, role, fn)
	case t.IsRegular():
		if !de.wanted {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted since the folder was read
			}
			w.errs(model.ScanError{RelativePath: rel, ErrorCode: protocol.ErrIOError, Message: err.Error()})
			return nil
		}
		return fn(item{rel: rel, stat: statOf(rel, info, role)})
	}
	if de.wanted { // a pipe, socket or device named like a comic
		w.errs(model.ScanError{RelativePath: rel, ErrorCode: protocol.ErrIOError, Message: "not a regular file: " + e.Type().String()})
	}
	return nil
}

// symlink indexes a link to a file inside the library under the link's own
// path. A link that leads out of the library is recorded, never followed;
// a link to a folder inside the library is not followed either (its target
// is walked in place, and following could loop).
func (w *walker) symlink(rel, abs string, role protocol.FileRole, fn func(item) error) error {
	target, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if w.wanted(rel) {
			w.errs(model.ScanError{RelativePath: rel, ErrorCode: protocol.ErrIOError, Message: "broken symlink: " + err.Error()})
		}
		return nil
	}
	if !within(w.root, target) {
		w.errs(model.ScanError{RelativePath: rel, ErrorCode: protocol.ErrSymlinkEscape,
			Message: "symlink leads outside the library to " + target})
		return nil
	}
	info, err := os.Stat(target)
	if err != nil || !info.Mode().IsRegular() || !w.wanted(rel) {
		return nil
	}
	return fn(item{rel: rel, stat: statOf(rel, info, role)})
}

func (w *walker) wanted(rel string) bool {
	return w.exts[strings.ToLower(path.Ext(rel))]
}

// skipName is layout.SkipName: the names a library never indexes.
func skipName(name string) bool { return layout.SkipName(name) }

func statOf(rel string, info fs.FileInfo, role protocol.FileRole) scanning.FileStat {
	st := scanning.FileStat{RelativePath: rel, SizeBytes: info.Size(), MtimeNS: info.ModTime().UnixNano(), Role: role}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.Inode, st.Device = int64(sys.Ino), int64(sys.Dev)
	}
	return st
}

// within reports whether the real path p is root or lies under it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}

// badName records a file or folder whose name is not valid UTF-8 (a latin1
// name from an old NAS share) as a scan error, under its name with the bad
// bytes replaced, and skips it: PostgreSQL refuses such text, and the API's
// JSON could only show a name that is not on disk. Renaming it makes it a
// book like any other at the next scan.
func (w *walker) badName(rel string, dir bool) {
	shown := strings.ToValidUTF8(rel, "\uFFFD")
	what := "file"
	if dir {
		shown, what = shown+"/", "folder (not walked)"
	}
	w.errs(model.ScanError{RelativePath: shown, ErrorCode: protocol.ErrIOError,
		Message: fmt.Sprintf("the %s name is not valid UTF-8 (%q): rename it to index it", what, path.Base(rel))})
}
