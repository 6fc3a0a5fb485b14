package archive

import (
	"os"
	"path/filepath"

	"github.com/bindery-nas/bindery/protocol"
)

// openFolder reads a folder of page images as one book: its pages are the
// image files directly inside it, in natural order, and a ComicInfo.xml
// beside them is its metadata. Subfolders, symlinks and junk are never
// pages. A page is opened with O_NOFOLLOW, so a symlink swapped in after
// the listing cannot lead the reader out of the library.
func openFolder(dir string) (Archive, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, coded(protocol.ErrIOError, err, "list folder")
	}
	raw := make([]rawEntry, 0, len(ents))
	for i, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		raw = append(raw, rawEntry{name: e.Name(), size: info.Size(), index: i})
	}
	if len(raw) > MaxEntries {
		return nil, codedf(protocol.ErrArchiveCorrupt, "folder lists %d files, more than %d", len(raw), MaxEntries)
	}
	a := &common{format: protocol.FormatFolder, sel: selectEntries(raw)}
	a.read = func(e Entry, limit int64) ([]byte, error) {
		f, err := openLeaf(filepath.Join(dir, e.Name))
		if err != nil {
			return nil, coded(protocol.ErrIOError, err, "read "+e.Name)
		}
		defer f.Close()
		data, err := readBounded(f, e, limit)
		if err != nil {
			return nil, classify(err, "read "+e.Name)
		}
		return data, nil
	}
	return a, nil
}
