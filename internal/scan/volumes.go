package scan

import (
	"context"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// volumeSet is a multi-volume RAR book in one folder listing.
type volumeSet struct {
	// later: this file continues a set; it is never a book of its own.
	later bool
	// rest are a first volume's later volumes, in volume order.
	rest []dirEntry
}

// volumeSets finds the multi-volume RAR books of a sorted folder listing:
// a file named like a first volume (Book.part1.rar, Book.rar) with later
// volumes beside it (Book.part2.rar, Book.r00) whose main header says it is
// a volume. Only such files have their header read, so a folder of
// ordinary books costs no I/O. A file named like a later volume whose
// header says so, and whose first volume is absent, is no book: its set is
// reported once.
func (w *walker) volumeSets(rel string, list []dirEntry) map[string]volumeSet {
	var sets map[string]volumeSet
	claim := func(name string, v volumeSet) {
		if sets == nil {
			sets = map[string]volumeSet{}
		}
		sets[name] = v
	}
	for _, de := range list {
		name := de.ent.Name()
		if !de.wanted || !de.ent.Type().IsRegular() {
			continue
		}
		naming, ok := layout.FirstVolume(name)
		if !ok {
			continue
		}
		rest := laterVolumes(list, naming)
		if len(rest) == 0 || !w.isVolume(rel, name, archive.FirstVolume) {
			continue
		}
		claim(name, volumeSet{rest: rest})
		for _, later := range rest {
			claim(later.ent.Name(), volumeSet{later: true})
		}
	}
	var orphans map[string][]string
	for _, de := range list {
		name := de.ent.Name()
		first, _, ok := layout.LaterVolume(name)
		if _, claimed := sets[name]; !ok || claimed || !de.wanted || !de.ent.Type().IsRegular() ||
			!w.isVolume(rel, name, archive.LaterVolume) {
			continue
		}
		claim(name, volumeSet{later: true})
		if orphans == nil {
			orphans = map[string][]string{}
		}
		orphans[first] = append(orphans[first], name)
	}
	for first, names := range orphans {
		w.errs(store.ScanError{RelativePath: path.Join(rel, first), Code: protocol.ErrArchiveIncomplete,
			Message: strings.Join(names, ", ") + " continue a multi-volume archive whose first volume, " + first + ", is not in the folder"})
	}
	return sets
}

// laterVolumes are the entries of the sorted list that continue naming's
// set. They all start with its stem, so they sit together in the list.
func laterVolumes(list []dirEntry, naming layout.VolumeNaming) []dirEntry {
	stem := naming.Stem()
	i := sort.Search(len(list), func(i int) bool { return list[i].key >= stem })
	var rest []dirEntry
	for ; i < len(list) && strings.HasPrefix(list[i].key, stem); i++ {
		if de := list[i]; de.ent.Type().IsRegular() && naming.Number(de.key) >= 2 {
			rest = append(rest, de)
		}
	}
	sort.Slice(rest, func(a, b int) bool { return naming.Number(rest[a].key) < naming.Number(rest[b].key) })
	return rest
}

// isVolume reads the main header of rel/name: a first volume must say it
// is a volume, a later one that it is not the first.
func (w *walker) isVolume(rel, name string, want archive.VolumeRole) bool {
	switch archive.ReadVolumeRole(filepath.Join(w.root, filepath.FromSlash(rel), name)) {
	case want, archive.SomeVolume:
		return true
	}
	return false
}

// volumeBook reports a multi-volume book under its first volume's path.
// Its size is the sum of its volumes' and its mtime the newest of theirs,
// so a change to any volume changes the book.
func (w *walker) volumeBook(ctx context.Context, rel string, de dirEntry, set volumeSet, fn func(item) error) error {
	info, err := de.ent.Info()
	if err != nil {
		return w.entry(ctx, rel, de, protocol.RoleBook, fn) // reports what is wrong
	}
	st := statOf(rel, info, protocol.RoleBook)
	st.Volumes = 1
	for _, later := range set.rest {
		li, err := later.ent.Info()
		if err != nil {
			continue // removed since the listing: the book reads as incomplete
		}
		st.SizeBytes += li.Size()
		st.MtimeNS = max(st.MtimeNS, li.ModTime().UnixNano())
		st.Volumes++
	}
	if st.Volumes < 2 {
		st.Volumes = 0
	}
	return fn(item{rel: rel, stat: st})
}
