// Package natsort orders names the way people number pages: "page 2" comes
// before "page 10".
//
// Strategy: a name is read as a sequence of tokens, each either one
// non-digit rune (compared case-insensitively) or one run of ASCII digits
// (compared by numeric value, of any length, without overflow). A digit run
// sorts after every rune below '0' and before every rune above '9', exactly
// where a digit would sort, so the token order is total. Names equal under
// that order are tie-broken by their raw bytes, which makes Less a strict
// total order: sorting is deterministic whatever the input order.
package natsort

import (
	"cmp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Less reports whether a sorts before b in natural order.
func Less(a, b string) bool {
	if c := compareNatural(a, b); c != 0 {
		return c < 0
	}
	return a < b
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b in
// natural order; 0 only when a == b.
func Compare(a, b string) int {
	if c := compareNatural(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// compareNatural compares token by token, ignoring case and leading zeros.
func compareNatural(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		da, db := isDigit(a[i]), isDigit(b[j])
		if da && db {
			ea, eb := digitEnd(a, i), digitEnd(b, j)
			if c := compareDigits(a[i:ea], b[j:eb]); c != 0 {
				return c
			}
			i, j = ea, eb
			continue
		}
		ra, sa := utf8.DecodeRuneInString(a[i:])
		rb, sb := utf8.DecodeRuneInString(b[j:])
		if da {
			ra = '0'
		}
		if db {
			rb = '0'
		}
		ra, rb = unicode.ToLower(ra), unicode.ToLower(rb)
		if ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		i += sa
		j += sb
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// compareDigits compares two digit runs by value: leading zeros stripped,
// then the longer run is larger, then byte order.
func compareDigits(a, b string) int {
	a, b = trimZeros(a), trimZeros(b)
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// Key returns a string whose byte order is the natural order of s, so that
// a database can sort and page by it with a plain index: every rune is
// lower-cased, and every digit run becomes '0', its length without leading
// zeros in two digits, then those digits ("page 10" → "page 00210"). Names
// that Compare only tells apart by their raw bytes (case, leading zeros)
// get equal keys; a caller breaks such ties with another column. Digit
// runs past 99 significant digits keep their first 99.
func Key(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		if isDigit(s[i]) {
			end := digitEnd(s, i)
			d := trimZeros(s[i:end])
			if len(d) > 99 {
				d = d[:99]
			}
			b.WriteByte('0')
			b.WriteByte('0' + byte(len(d)/10))
			b.WriteByte('0' + byte(len(d)%10))
			b.WriteString(d)
			i = end
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(unicode.ToLower(r))
		i += size
	}
	return b.String()
}
