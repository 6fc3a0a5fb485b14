package reader

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/thumbs"
)

// SetVersion is the version of a multi-volume RAR book as its volumes on
// disk give it, the way the scan records the set (library_files: the sum
// of the sizes and the newest mtime): replacing any volume changes it.
type SetVersion struct {
	Volumes int
	Size    int64
	Newest  time.Time
}

func (v SetVersion) String() string {
	return fmt.Sprintf("%d-%x-%x", v.Volumes, v.Size, v.Newest.UnixNano())
}

// VersionOfSet stats the first volume at first and the later volumes
// beside it that its naming names (layout.VolumeNaming.Set). Errors are
// *protocol.Error (source_missing, io_error).
func VersionOfSet(first string) (SetVersion, error) {
	dir, name := filepath.Split(first)
	names := []string{}
	if naming, ok := layout.FirstVolume(name); ok {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return SetVersion{}, thumbs.SourceError(err)
		}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		names = naming.Set(names)
	}
	var v SetVersion
	for _, n := range append([]string{name}, names...) {
		st, err := os.Lstat(filepath.Join(dir, n))
		if err != nil {
			return SetVersion{}, thumbs.SourceError(err)
		}
		v.Volumes++
		v.Size += st.Size()
		if st.ModTime().After(v.Newest) {
			v.Newest = st.ModTime()
		}
	}
	return v, nil
}
