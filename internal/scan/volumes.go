package scan

import (
	"context"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/model"
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
	w.splitZips(rel, list, claim)
	var orphans map[string][]string
	for _, de := range list {
		name := de.ent.Name()
		if _, claimed := sets[name]; claimed || !de.ent.Type().IsRegular() {
			continue
		}
		first, _, ok := layout.LaterVolume(name)
		if !ok {
			// Old-style later volumes (.r00) are no comic extension: they
			// are looked at when their first volume's extension is.
			if first, _, ok = layout.OldLaterVolume(name); !ok || !w.wanted(first) || inList(list, first) {
				continue
			}
		} else if !de.wanted {
			continue
		}
		if !w.isVolume(rel, name, archive.LaterVolume) {
			continue
		}
		claim(name, volumeSet{later: true})
		if orphans == nil {
			orphans = map[string][]string{}
		}
		orphans[first] = append(orphans[first], name)
	}
	for first, names := range orphans {
		w.errs(model.ScanError{RelativePath: path.Join(rel, first), ErrorCode: protocol.ErrArchiveIncomplete,
			Message: strings.Join(names, ", ") + " continue a multi-volume archive whose first volume, " + first + ", is not in the folder"})
	}
	return sets
}

// inList reports whether the sorted list holds a file named name.
func inList(list []dirEntry, name string) bool {
	i := sort.Search(len(list), func(i int) bool { return list[i].key >= name })
	return i < len(list) && list[i].key == name
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

// splitZips claims the split zips of a sorted folder listing: a .zip or
// .cbz with Book.z01 … beside it whose end record says it is the last part
// of a split archive is the book over its parts (read first, in order);
// the parts are never books. Only such files have their end record read.
func (w *walker) splitZips(rel string, list []dirEntry, claim func(string, volumeSet)) {
	for _, de := range list {
		name := de.ent.Name()
		if !de.wanted || !de.ent.Type().IsRegular() {
			continue
		}
		i := strings.LastIndexByte(name, '.')
		if i <= 0 || (!inList(list, name[:i+1]+"z01") && !inList(list, name[:i+1]+"Z01")) {
			continue
		}
		if len(archive.SplitZipParts(filepath.Join(w.root, filepath.FromSlash(rel)), name)) == 0 {
			continue
		}
		var names []string
		byName := map[string]dirEntry{}
		for _, p := range list {
			if p.ent.Type().IsRegular() && strings.HasPrefix(p.key, name[:i+1]) {
				names = append(names, p.key)
				byName[p.key] = p
			}
		}
		parts, _ := layout.SplitZipParts(name, names)
		set := volumeSet{}
		for _, p := range parts {
			set.rest = append(set.rest, byName[p])
			claim(p, volumeSet{later: true})
		}
		claim(name, set)
	}
	w.splitZipOrphans(rel, list)
}

// splitZipOrphans reports, once per set, the parts of a split zip whose
// last part (Book.zip or Book.cbz) is not in the folder: a Book.z01 that
// starts like one, in a library that indexes zips or cbzs.
func (w *walker) splitZipOrphans(rel string, list []dirEntry) {
	for _, de := range list {
		name := de.ent.Name()
		if !de.ent.Type().IsRegular() || len(name) < 5 || (name[len(name)-3:] != "z01" && name[len(name)-3:] != "Z01") {
			continue
		}
		stem, z := name[:len(name)-3], name[len(name)-3]
		zipName, cbzName := stem+"zip", stem+"cbz"
		if z == 'Z' {
			zipName, cbzName = stem+"ZIP", stem+"CBZ"
		}
		if inList(list, zipName) || inList(list, cbzName) || (!w.wanted(zipName) && !w.wanted(cbzName)) ||
			!archive.IsSplitZipStart(filepath.Join(w.root, filepath.FromSlash(rel), name)) {
			continue
		}
		var names []string
		for _, p := range list {
			if p.ent.Type().IsRegular() && strings.HasPrefix(p.key, stem) {
				names = append(names, p.key)
			}
		}
		parts, _ := layout.SplitZipParts(zipName, names)
		w.errs(model.ScanError{RelativePath: path.Join(rel, zipName), ErrorCode: protocol.ErrArchiveIncomplete,
			Message: strings.Join(parts, ", ") + " begin a split zip whose last part, " + zipName + ", is not in the folder"})
	}
}
