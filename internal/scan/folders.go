package scan

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/protocol"
)

// folderShape is what a folder's listing makes of the images in it.
type folderShape int

const (
	// plainFolder: images in it are books, each on its own.
	plainFolder folderShape = iota
	// folderBook: two or more images and nothing else indexable (no
	// archive, no subfolder, no symlink): the folder is one book.
	folderBook
	// besideBooks: archives or subfolders sit beside the images, so an
	// image named cover, folder, poster or series is series art.
	besideBooks
)

// shape classifies a folder from its listing alone (names and types, no
// stat). The library root is never a folder book: images there are loose.
func (w *walker) shape(rel string, list []dirEntry) folderShape {
	images, others := 0, 0
	for _, de := range list {
		switch {
		case de.ent.IsDir():
			others++
		case de.image:
			images++
		case de.wanted && !de.video: // a trailer beside the pages keeps them a book
			others++
		}
	}
	switch {
	case others > 0:
		return besideBooks
	case images >= 2 && rel != "":
		return folderBook
	}
	return plainFolder
}

// folderBook reports a folder book: first the folder itself (its
// relative_path ends in '/', so it sorts before its pages), then each
// image as a page. The folder's size is the sum of its pages' sizes and its
// mtime the newest of the folder, its pages and its ComicInfo.xml: adding,
// removing, renaming or rewriting any page changes the book.
func (w *walker) folderBook(rel string, self fs.DirEntry, list []dirEntry, fn func(item) error) error {
	book := scanning.FileStat{RelativePath: rel + "/", Role: protocol.RoleFolder}
	if self != nil {
		if info, err := self.Info(); err == nil {
			book = statOf(book.RelativePath, info, protocol.RoleFolder)
			book.SizeBytes = 0
		}
	}
	items, pages := make([]item, 0, len(list)), 0
	for _, de := range list {
		name := de.ent.Name()
		wanted, meta := de.wanted, strings.EqualFold(name, "comicinfo.xml")
		if !wanted && !meta {
			continue
		}
		childRel := path.Join(rel, name)
		info, err := de.ent.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // else deleted since the folder was read
				w.errs(model.ScanError{RelativePath: childRel, ErrorCode: protocol.ErrIOError, Message: err.Error()})
			}
			continue
		}
		if de.video { // a file of its own, in path order among the pages
			items = append(items, item{rel: childRel, stat: statOf(childRel, info, protocol.RoleBook)})
			continue
		}
		book.MtimeNS = max(book.MtimeNS, info.ModTime().UnixNano())
		if wanted {
			book.SizeBytes += info.Size()
			items = append(items, item{rel: childRel, stat: statOf(childRel, info, protocol.RolePage)})
			pages++
		}
	}
	if pages >= 2 {
		if err := fn(item{rel: book.RelativePath, stat: book}); err != nil {
			return err
		}
	} else { // pages vanished between the listing and their stat
		for i := range items {
			items[i].stat.Role = protocol.RoleBook
		}
	}
	for _, p := range items {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}
