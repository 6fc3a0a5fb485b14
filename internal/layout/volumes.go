package layout

import (
	"regexp"
	"strconv"
	"strings"
)

// MaxVolumes caps the volumes of one RAR set. WinRAR's old naming runs out
// near 900 (.r00 … .z99); real comic sets have a handful.
const MaxVolumes = 999

var (
	// newVolumeName is WinRAR's naming since 3.0: Book.part1.rar,
	// Book.part2.rar … (any zero padding), also with the .cbr extension.
	newVolumeName = regexp.MustCompile(`(?i)^(.+\.part)([0-9]+)(\.(?:rar|cbr))$`)
)

// VolumeNaming is how the names of a RAR volume set go on from its first
// volume, following the rules WinRAR writes and unrar reads (and so
// rardecode, which opens the later volumes by these names).
type VolumeNaming struct {
	stem, tail string
	width      int
	old        bool
}

// FirstVolume returns the naming of the set that name would start:
// "Book.part1.rar" (or part01, part001) in the new naming, "Book.rar" or
// "Book.cbr" in the old one. Only the main header can tell whether a file
// so named really starts a set.
func FirstVolume(name string) (VolumeNaming, bool) {
	if !hasRarExt(name) {
		return VolumeNaming{}, false
	}
	if m := partName(name); m != nil {
		if n, err := strconv.Atoi(m[2]); err == nil && n == 1 {
			return VolumeNaming{stem: m[1], tail: m[3], width: len(m[2])}, true
		}
		return VolumeNaming{}, false
	}
	if len(name) > len(".rar") {
		return VolumeNaming{stem: name[:len(name)-len("ar")], old: true}, true
	}
	return VolumeNaming{}, false
}

// hasRarExt reports a .rar or .cbr extension, any case: the cheap test
// every file of a walk meets, before any pattern.
func hasRarExt(name string) bool {
	if len(name) < len(".rar") {
		return false
	}
	ext := name[len(name)-len(".rar"):]
	return strings.EqualFold(ext, ".rar") || strings.EqualFold(ext, ".cbr")
}

// partName matches the new naming (stem, number, extension), or nil.
func partName(name string) []string {
	if !strings.Contains(strings.ToLower(name), ".part") {
		return nil
	}
	return newVolumeName.FindStringSubmatch(name)
}

// LaterVolume reports that name is volume n ≥ 2 of a set in the new
// naming, and the name its first volume has. Old-style later volumes
// (.r00) are not comic extensions, so they are never taken for books.
func LaterVolume(name string) (first string, n int, ok bool) {
	if !hasRarExt(name) {
		return "", 0, false
	}
	m := partName(name)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 2 || n > MaxVolumes {
		return "", 0, false
	}
	return m[1] + pad(1, len(m[2])) + m[3], n, true
}

// OldLaterVolume reports that name is volume n ≥ 2 of a set in the old
// naming, and the name its first volume has: Book.r00 is volume 2 of
// Book.rar, Book.c05 volume 7 of Book.cbr (rardecode and unrar name them
// so), the extension's case kept.
func OldLaterVolume(name string) (first string, n int, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || len(name)-i != 4 || !isDigits(name[i+2:]) {
		return "", 0, false
	}
	var ext string
	switch name[i+1] {
	case 'r':
		ext = "rar"
	case 'R':
		ext = "RAR"
	case 'c':
		ext = "cbr"
	case 'C':
		ext = "CBR"
	default:
		return "", 0, false
	}
	d, _ := strconv.Atoi(name[i+2:])
	return name[:i+1] + ext, 2 + d, true
}

// Stem is the start every later volume's name shares with the first.
func (v VolumeNaming) Stem() string { return v.stem }

// Number is the volume number of name in the set (2 for the second
// volume), or 0 when name is not a later volume of it.
func (v VolumeNaming) Number(name string) int {
	if !strings.HasPrefix(name, v.stem) {
		return 0
	}
	rest := name[len(v.stem):]
	if v.old {
		// stem.r00 is volume 2, stem.r99 volume 101 (WinRAR goes on with
		// .s00, which no comic set reaches).
		if len(rest) != 2 || !isDigits(rest) {
			return 0
		}
		d, _ := strconv.Atoi(rest)
		return 2 + d
	}
	digits, ok := strings.CutSuffix(rest, v.tail)
	if !ok || len(digits) < v.width || !isDigits(digits) {
		return 0
	}
	n, _ := strconv.Atoi(digits)
	if n < 2 || n > MaxVolumes || digits != pad(n, v.width) {
		return 0
	}
	return n
}

// Set returns the later volumes of the set among names, in volume order.
// A gap (volume 3 present, 2 absent) keeps what is present: the book is
// then read as incomplete, and a change to any volume still changes it.
func (v VolumeNaming) Set(names []string) []string {
	byNum := map[int]string{}
	for _, name := range names {
		if n := v.Number(name); n >= 2 {
			byNum[n] = name
		}
	}
	out := make([]string, 0, len(byNum))
	for n := 2; n <= MaxVolumes && len(out) < len(byNum); n++ {
		if name, ok := byNum[n]; ok {
			out = append(out, name)
		}
	}
	return out
}

// StripVolume removes a ".part1"-style volume suffix from a file name
// without extension: "Saga v01.part1" is "Saga v01".
func StripVolume(base string) string {
	i := strings.LastIndex(strings.ToLower(base), ".part")
	if i <= 0 || !isDigits(base[i+len(".part"):]) {
		return base
	}
	return base[:i]
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// SplitZipParts returns the earlier parts among names of the split zip
// whose last part is last (Book.zip or Book.cbz: Book.z01, Book.z02 …, the
// letter's case following the extension's), in part order, stopping at
// the first gap. ok=false when last has no zip or cbz extension.
func SplitZipParts(last string, names []string) (parts []string, ok bool) {
	i := strings.LastIndexByte(last, '.')
	if i <= 0 {
		return nil, false
	}
	ext := last[i+1:]
	if !strings.EqualFold(ext, "zip") && !strings.EqualFold(ext, "cbz") {
		return nil, false
	}
	z := "z"
	if ext[0] >= 'A' && ext[0] <= 'Z' {
		z = "Z"
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	for n := 1; n < 100; n++ {
		name := last[:i+1] + z + pad(n, 2)
		if !have[name] {
			break
		}
		parts = append(parts, name)
	}
	return parts, true
}
