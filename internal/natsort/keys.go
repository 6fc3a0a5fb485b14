package natsort

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// articles are ignored at the start of a series name for sorting only:
// "The Walking Dead" sorts under W, "Les Légendaires" under L(égendaires).
var articles = []string{"the ", "a ", "an ", "le ", "la ", "les ", "l'", "l’", "der ", "die ", "das ", "el ", "los "}

// SeriesKey is the sort key of a series name: natural order, case- and
// accent-insensitive, a leading article ignored.
func SeriesKey(name string) string {
	s := strings.ToLower(strings.Join(strings.Fields(name), " "))
	for _, a := range articles {
		if rest, ok := strings.CutPrefix(s, a); ok && rest != "" {
			s = rest
			break
		}
	}
	return Key(foldAccents(s))
}

func foldAccents(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return norm.NFC.String(b.String())
}

// BookKey is the sort key of a book in its series: its ComicInfo Number
// (numerically: "-1" < "½" < "1" < "12" < "12.5" < "13"), then its Volume,
// then its file name in natural order. A book without a usable number or
// volume sorts after the books that have one.
func BookKey(number string, volume int64, hasVolume bool, relPath string) string {
	var b strings.Builder
	if n, ok := ParseNumber(number); ok {
		// Offset so that every number in range is positive; fixed width
		// so that bytes compare as values.
		fmt.Fprintf(&b, "0%024.6f", n+1e15)
	} else {
		b.WriteByte('1')
	}
	if hasVolume && volume >= 0 {
		fmt.Fprintf(&b, "0%019d", volume)
	} else {
		b.WriteByte('1')
	}
	b.WriteString(Key(path.Base(relPath)))
	return b.String()
}

// ParseNumber reads a ComicInfo Number: a decimal ("12", "12.5", "-1"), a
// fraction ("1/2", "½"), or a number with a trailing letter ("12a" counts
// as 12). Anything else ("abc", "", "10^30", beyond ±10^15) is not a
// number.
func ParseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	switch s {
	case "½":
		return 0.5, true
	case "¼":
		return 0.25, true
	case "¾":
		return 0.75, true
	}
	if num, den, ok := strings.Cut(s, "/"); ok {
		a, err1 := strconv.ParseFloat(num, 64)
		d, err2 := strconv.ParseFloat(den, 64)
		if err1 != nil || err2 != nil || d == 0 {
			return 0, false
		}
		return inRange(a / d)
	}
	end := len(s)
	for end > 0 && unicode.IsLetter(rune(s[end-1])) && s[end-1] < 0x80 {
		end--
	}
	if end == 0 || end < len(s)-1 {
		return 0, false
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	if err != nil {
		return 0, false
	}
	return inRange(v)
}

func inRange(v float64) (float64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1e15 {
		return 0, false
	}
	return v, true
}
