package archive

import (
	"path"
	"slices"
	"strings"

	"github.com/bindery-nas/bindery/internal/natsort"
)

// imageExts are the page extensions, lowercase with the dot: every format
// the cover renderer's libvips loads (TIFF, from scanners and old rips,
// included).
var imageExts = []string{".jpg", ".jpeg", ".png", ".webp", ".gif", ".avif", ".bmp", ".jxl", ".tif", ".tiff"}

// IsImageName reports whether name has a page image extension
// (case-insensitive): .jpg .jpeg .png .webp .gif .avif .bmp .jxl .tif .tiff.
func IsImageName(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return slices.Contains(imageExts, ext)
}

// cleanName normalises an entry name to forward slashes without empty or
// "." components, and reports ok=false for names that could escape the
// archive (absolute, drive letter, ".." component, NUL) or are empty. Such
// entries are never pages nor ComicInfo.
func cleanName(name string) (string, bool) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", false
	}
	n := strings.ReplaceAll(name, `\`, "/")
	if strings.HasPrefix(n, "/") || hasDriveLetter(n) {
		return "", false
	}
	parts := strings.Split(n, "/")
	kept := parts[:0]
	for _, p := range parts {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", false
		}
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		return "", false
	}
	return strings.Join(kept, "/"), true
}

func hasDriveLetter(n string) bool {
	return len(n) >= 2 && n[1] == ':' && (n[0]|0x20 >= 'a' && n[0]|0x20 <= 'z')
}

// isJunk reports entries that are never content: anything under a
// __MACOSX/ folder, any component starting with '.' (dot-files, "._x"
// resource forks, .DS_Store) and Windows' Thumbs.db.
func isJunk(clean string) bool {
	for _, p := range strings.Split(clean, "/") {
		if p == "__MACOSX" || strings.HasPrefix(p, ".") {
			return true
		}
	}
	return strings.EqualFold(path.Base(clean), "thumbs.db")
}

// rawEntry is one listed entry before selection.
type rawEntry struct {
	name   string // as stored, possibly unsafe
	size   int64
	dir    bool
	index  int
	crc    uint32
	hasCRC bool
}

// selection is what every format computes from its listing.
type selection struct {
	pages     []Entry
	comicInfo *Entry
}

// selectEntries picks the pages (safe, non-junk image files in natural
// order) and the ComicInfo.xml (root wins, else the shallowest, ties by
// natural order) from a listing.
func selectEntries(raw []rawEntry) selection {
	var sel selection
	ciDepth := 0
	for _, r := range raw {
		if r.dir {
			continue
		}
		name, ok := cleanName(r.name)
		if !ok || isJunk(name) {
			continue
		}
		e := Entry{Name: name, Size: r.size, CRC32: r.crc, HasCRC: r.hasCRC, index: r.index}
		if IsImageName(name) {
			sel.pages = append(sel.pages, e)
			continue
		}
		if !strings.EqualFold(path.Base(name), "comicinfo.xml") {
			continue
		}
		depth := strings.Count(name, "/")
		if sel.comicInfo == nil || depth < ciDepth || (depth == ciDepth && natsort.Less(name, sel.comicInfo.Name)) {
			ci := e
			sel.comicInfo, ciDepth = &ci, depth
		}
	}
	slices.SortStableFunc(sel.pages, func(a, b Entry) int { return natsort.Compare(a.Name, b.Name) })
	return sel
}
