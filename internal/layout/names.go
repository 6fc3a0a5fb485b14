// Package layout reads a library's folder layout the way comic servers do:
// which series a path names, which folders only name a volume, and which
// images are series art rather than books (docs/SCANNING.md has the rules).
package layout

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/bindery-nas/bindery/protocol"
)

// Guess is a series name derived from a file's place in the library,
// used when ComicInfo.xml names no series.
type Guess struct {
	Name   string
	Year   int
	Source protocol.MetadataSource
}

var (
	// trailingGroup is a "(...)" or "[...]" group at the end of a name.
	trailingGroup = regexp.MustCompile(`\s*(?:\(([^()]*)\)|\[([^\[\]]*)\])\s*$`)
	// anyGroup is a "(...)" or "[...]" or "{...}" group anywhere.
	anyGroup = regexp.MustCompile(`\(([^()]*)\)|\[([^\[\]]*)\]|\{[^{}]*\}`)
	yearText = regexp.MustCompile(`^(1[89]\d\d|20\d\d)$`)
	// issueToken is an explicit volume/issue/chapter token in a file name:
	// "v01", "Vol. 2", "Volume 3", "#004", "#12.5", "c001", "ch 12",
	// "Chapter 5", "t3", "tome 2", "issue 7", "no. 8", "第1巻", "01話".
	issueToken = regexp.MustCompile(`(?i)(?:^|[\s_.\-])(?:(?:v|vol\.?|volume|#|c|ch\.?|chap\.?|chapter|chapitre|t|tome|issue|no\.?)\s*#?` +
		num + `|第?\s*` + num + `\s*[巻話章集])(?:[\s_.\-]|$)`)
	// bareNumber is a number standing alone in a file name ("Batman 001").
	// It ends at a word boundary rather than consuming the separator, so
	// that "2099 001" yields both numbers.
	bareNumber = regexp.MustCompile(`(?:^|[\s_.\-])[0-9]+(?:\.[0-9]+)?\b`)
	// genericFolder is a folder that only names a part of a series: a
	// volume, chapter, tome, season or book ("Volume 01", "Vol. 2", "v03",
	// "Chapter 12", "Tome 3", "Saison 2", "S01", "第1巻", "01", "Vol 1 -
	// Romance Dawn"), or its extras. Books in it belong to the folder above.
	genericFolder = regexp.MustCompile(`(?i)^(?:(?:(?:vol(?:ume)?|v|tome|t|chapter|chapitre|ch|chap|season|saison|s|book|livre|part|partie|issue|no)\.?\s*#?)?` +
		num + `(?:\s*[-–~]\s*` + num + `)?(?:\s*[-–:]\s.*)?|第?\s*` + num + `\s*[巻話章集部].*|extras?|specials?|bonus|omake|one[- ]?shots?)$`)
)

// num is an issue or volume number: ASCII or full-width digits, with an
// optional decimal part ("12.5").
const num = `[0-9０-９]+(?:\.[0-9]+)?`

// GuessSeries names the series of a file without ComicInfo (docs/SCANNING.md,
// rules 2 and 3): the nearest folder above the file that names more than a
// volume, chapter or extras ("One Piece/Volume 01/ch 1.cbz" is One Piece;
// "Batman (2016)" is Batman, year 2016; unparseable names are taken raw);
// a file at the library root, or under generic folders only, is named by
// its own file name without extension, groups and volume/issue tokens.
func GuessSeries(rel string) Guess {
	dir, file := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	for dir != "" && dir != "." {
		name, year, part := folderName(path.Base(dir))
		if !part {
			return Guess{Name: name, Year: year, Source: protocol.MetaFolder}
		}
		dir = path.Dir(dir)
	}
	name, year := parseFileName(file)
	return Guess{Name: name, Year: year, Source: protocol.MetaFilename}
}

// folderName is the series name a folder gives, its year, and whether it
// only names a part of a series (a volume, chapter, tome, season or extras).
func folderName(raw string) (name string, year int, part bool) {
	name, year = parseFolder(raw)
	if name == "" {
		name = CleanName(raw)
	}
	return name, year, genericFolder.MatchString(name)
}

// parseFolder strips trailing "(...)"/"[...]" groups from a folder name and
// returns the rest with the first four-digit year found in them.
func parseFolder(raw string) (name string, year int) {
	s := strings.TrimSpace(raw)
	for {
		m := trailingGroup.FindStringSubmatchIndex(s)
		if m == nil || m[0] == 0 {
			break
		}
		if inner := groupText(s, m); year == 0 && yearText.MatchString(inner) {
			year, _ = strconv.Atoi(inner)
		}
		s = strings.TrimSpace(s[:m[0]])
	}
	return CleanName(s), year
}

// parseFileName derives a series name from a file name: the text before
// its first explicit volume/issue token, or else before its last bare
// number ("Spider-Man 2099 001" is Spider-Man 2099), with groups removed.
func parseFileName(file string) (name string, year int) {
	base := StripVolume(strings.TrimSuffix(file, path.Ext(file)))
	s := strings.ReplaceAll(base, "_", " ")
	for _, m := range anyGroup.FindAllStringSubmatchIndex(s, -1) {
		if inner := groupText(s, m); year == 0 && yearText.MatchString(inner) {
			year, _ = strconv.Atoi(inner)
		}
	}
	s = anyGroup.ReplaceAllString(s, " ")
	if cut := tokenStart(s); cut > 0 {
		s = s[:cut]
	}
	name = strings.Trim(CleanName(s), " -_.,")
	if name == "" {
		name = CleanName(base)
	}
	return name, year
}

// tokenStart is where the volume/issue part of s starts: its first
// explicit token past the start, else (when it has no explicit token at
// all) its last bare number past the start; 0 when there is none.
func tokenStart(s string) int {
	explicit := issueToken.FindAllStringIndex(s, -1)
	for _, m := range explicit {
		if m[0] > 0 {
			return m[0]
		}
	}
	if len(explicit) > 0 {
		return 0
	}
	cut := 0
	for _, m := range bareNumber.FindAllStringIndex(s, -1) {
		if m[0] > 0 {
			cut = m[0]
		}
	}
	return cut
}

func groupText(s string, m []int) string {
	for i := 2; i+1 < len(m); i += 2 {
		if m[i] >= 0 {
			return strings.TrimSpace(s[m[i]:m[i+1]])
		}
	}
	return ""
}

// CleanName trims a name and collapses its runs of white space.
func CleanName(s string) string { return strings.Join(strings.Fields(s), " ") }

// IdentityKey is the case-insensitive form of a series name or publisher:
// NFC-normalized, Unicode case-folded ("Straße" and "STRASSE" are one
// series), white space collapsed. It is what the unique index on
// (library_id, name_key, publisher_key) compares.
func IdentityKey(s string) string {
	return cases.Fold().String(norm.NFC.String(CleanName(s)))
}
