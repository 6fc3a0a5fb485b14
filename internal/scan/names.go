package scan

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/bindery-nas/bindery/protocol"
)

// seriesGuess is a series name derived from a file's place in the library,
// used when ComicInfo.xml names no series.
type seriesGuess struct {
	name   string
	year   int
	source protocol.MetadataSource
}

var (
	// trailingGroup is a "(...)" or "[...]" group at the end of a name.
	trailingGroup = regexp.MustCompile(`\s*(?:\(([^()]*)\)|\[([^\[\]]*)\])\s*$`)
	// anyGroup is a "(...)" or "[...]" or "{...}" group anywhere.
	anyGroup = regexp.MustCompile(`\(([^()]*)\)|\[([^\[\]]*)\]|\{[^{}]*\}`)
	yearText = regexp.MustCompile(`^(1[89]\d\d|20\d\d)$`)
	// issueToken starts the volume/issue part of a file name: "v01",
	// "Vol. 2", "Volume 3", "#004", "ch 12", "Chapter 5", "t3", "tome 2",
	// "issue 7", "no. 8" or a bare number.
	issueToken = regexp.MustCompile(`(?i)(?:^|[\s_.\-])(?:v|vol\.?|volume|#|ch\.?|chap\.?|chapter|t|tome|issue|no\.?)?\s*#?\d+(?:\.\d+)?(?:[\s_.\-]|$)`)
)

// guessSeries names the series of a file without ComicInfo: a file in a
// folder takes the folder's name ("Batman (2016)" is Batman, year 2016;
// unparseable names are taken raw), a file at the library root takes its
// own name without extension, groups and volume/issue tokens.
func guessSeries(rel string) seriesGuess {
	dir, file := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir != "" {
		raw := path.Base(dir)
		name, year := parseFolder(raw)
		if name == "" {
			name = cleanName(raw)
		}
		return seriesGuess{name: name, year: year, source: protocol.MetaFolder}
	}
	name, year := parseFileName(file)
	return seriesGuess{name: name, year: year, source: protocol.MetaFilename}
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
	return cleanName(s), year
}

// parseFileName derives a series name from a file name at the library root.
func parseFileName(file string) (name string, year int) {
	base := strings.TrimSuffix(file, path.Ext(file))
	s := strings.ReplaceAll(base, "_", " ")
	for _, m := range anyGroup.FindAllStringSubmatchIndex(s, -1) {
		if inner := groupText(s, m); year == 0 && yearText.MatchString(inner) {
			year, _ = strconv.Atoi(inner)
		}
	}
	s = anyGroup.ReplaceAllString(s, " ")
	for _, m := range issueToken.FindAllStringIndex(s, -1) {
		if m[0] > 0 {
			s = s[:m[0]]
			break
		}
	}
	name = strings.Trim(cleanName(s), " -_.,")
	if name == "" {
		name = cleanName(base)
	}
	return name, year
}

func groupText(s string, m []int) string {
	for i := 2; i+1 < len(m); i += 2 {
		if m[i] >= 0 {
			return strings.TrimSpace(s[m[i]:m[i+1]])
		}
	}
	return ""
}

// cleanName trims a name and collapses its runs of white space.
func cleanName(s string) string { return strings.Join(strings.Fields(s), " ") }

// identityKey is the case-insensitive form of a series name or publisher:
// NFC-normalized, Unicode case-folded ("Straße" and "STRASSE" are one
// series), white space collapsed. It is what the unique index on
// (library_id, name_key, publisher_key) compares.
func identityKey(s string) string {
	return cases.Fold().String(norm.NFC.String(cleanName(s)))
}
