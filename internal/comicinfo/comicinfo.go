// Package comicinfo parses ComicInfo.xml (the ComicRack/Anansi schema) into
// the fields Bindery stores.
//
// Strategy: a streaming token walk with hard limits rather than
// xml.Unmarshal into a struct, so hostile input is refused early and
// cheaply: the input size is capped, any DOCTYPE is refused (no entity
// definitions, so no billion laughs and no external entities), nesting
// depth is capped. Everything else is tolerated: a byte-order mark, UTF-16,
// Latin-1 declarations, unknown elements, and numbers that do not parse
// (the field is left at zero, the rest of the document still counts).
package comicinfo

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// Limits on input; larger or deeper documents are refused.
const (
	// MaxSize is the largest document accepted (real ones are a few KiB).
	MaxSize = 1 << 20
	// MaxDepth is the deepest element nesting accepted (the schema uses 3).
	MaxDepth = 32
)

// Errors for refused documents; match them with errors.Is.
var (
	ErrTooLarge = errors.New("comicinfo: document too large")
	ErrDoctype  = errors.New("comicinfo: DOCTYPE not allowed")
	ErrTooDeep  = errors.New("comicinfo: nesting too deep")
	ErrNotXML   = errors.New("comicinfo: not a ComicInfo document")
)

// ComicInfo holds the fields Bindery uses. Text fields are trimmed; numbers
// that are missing or do not parse are 0.
type ComicInfo struct {
	Series, Number, Title, Publisher string
	Volume, Year, Month              int
	Genre, Tags, AgeRating           string
	LanguageISO, Writer, Penciller   string
	Summary, Web                     string
	// Manga is <Manga> lowercased and without "and": "no", "yes",
	// "yes_rtl" (YesAndRightToLeft), or "" for Unknown or anything else.
	Manga string
	// Count is <Count>, the number of issues of the series; 0 unknown.
	Count int
	// FrontCoverPage is the 0-based page index marked
	// <Page Image="n" Type="FrontCover"/> in <Pages>, or -1 when none.
	FrontCoverPage int
}

// Parse parses a ComicInfo.xml document.
func Parse(data []byte) (*ComicInfo, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxSize)
	}
	data, err := toUTF8(data)
	if err != nil {
		return nil, err
	}
	p := parser{ci: &ComicInfo{FrontCoverPage: -1}}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charsetReader
	if err := p.run(d); err != nil {
		return nil, err
	}
	return p.ci, nil
}

// toUTF8 removes a UTF-8 BOM and converts UTF-16 (detected by its BOM).
func toUTF8(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xef, 0xbb, 0xbf}):
		return data[3:], nil
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}), bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		out, err := unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder().Bytes(data)
		if err != nil {
			return nil, fmt.Errorf("comicinfo: decode utf-16: %w", err)
		}
		return out, nil
	}
	return data, nil
}

// charsetReader accepts the declarations seen in the wild. UTF-16 input
// was converted already, so its declaration is passed through.
func charsetReader(label string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "utf-16", "utf16", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "latin1", "latin-1":
		return charmap.ISO8859_1.NewDecoder().Reader(in), nil
	case "windows-1252", "cp1252":
		return charmap.Windows1252.NewDecoder().Reader(in), nil
	}
	return nil, fmt.Errorf("comicinfo: unsupported encoding %q", label)
}

type parser struct {
	ci    *ComicInfo
	stack []string // lowercase local names of open elements
	text  strings.Builder
}

func (p *parser) run(d *xml.Decoder) error {
	sawRoot := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			if !sawRoot {
				return ErrNotXML
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("comicinfo: %w", err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			if bytes.HasPrefix(bytes.ToUpper(bytes.TrimSpace(t)), []byte("DOCTYPE")) {
				return ErrDoctype
			}
		case xml.StartElement:
			if len(p.stack) == 0 && (sawRoot || !strings.EqualFold(t.Name.Local, "ComicInfo")) {
				return ErrNotXML
			}
			sawRoot = true
			if len(p.stack) >= MaxDepth {
				return ErrTooDeep
			}
			p.stack = append(p.stack, strings.ToLower(t.Name.Local))
			p.text.Reset()
			p.start(t)
		case xml.CharData:
			if len(p.stack) == 2 && p.text.Len() < MaxSize {
				p.text.Write(t)
			}
		case xml.EndElement:
			if len(p.stack) == 2 {
				p.field(p.stack[1], strings.TrimSpace(p.text.String()))
			}
			p.stack = p.stack[:len(p.stack)-1]
		}
	}
}

// start handles <Page> under <Pages>: the first FrontCover wins.
func (p *parser) start(t xml.StartElement) {
	if len(p.stack) != 3 || p.stack[1] != "pages" || p.stack[2] != "page" || p.ci.FrontCoverPage >= 0 {
		return
	}
	image, typ := -1, ""
	for _, a := range t.Attr {
		switch strings.ToLower(a.Name.Local) {
		case "image":
			if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n >= 0 {
				image = n
			}
		case "type":
			typ = strings.TrimSpace(a.Value)
		}
	}
	if image >= 0 && strings.EqualFold(typ, "FrontCover") {
		p.ci.FrontCoverPage = image
	}
}

// field stores one child of the root; unknown elements are ignored.
func (p *parser) field(name, v string) {
	ci := p.ci
	switch name {
	case "series":
		ci.Series = v
	case "number":
		ci.Number = v
	case "title":
		ci.Title = v
	case "publisher":
		ci.Publisher = v
	case "volume":
		ci.Volume = positive(v, 1<<31-1)
	case "year":
		ci.Year = positive(v, 9999)
	case "month":
		ci.Month = positive(v, 12)
	case "genre":
		ci.Genre = v
	case "tags":
		ci.Tags = v
	case "agerating":
		ci.AgeRating = v
	case "languageiso":
		ci.LanguageISO = v
	case "writer":
		ci.Writer = v
	case "penciller":
		ci.Penciller = v
	case "summary":
		ci.Summary = v
	case "web":
		ci.Web = v
	case "manga":
		ci.Manga = map[string]string{"no": "no", "yes": "yes", "yesandrighttoleft": "yes_rtl"}[strings.ToLower(v)]
	case "count":
		ci.Count = positive(v, 1<<31-1)
	}
}

// positive parses an integer in 1..limit; anything else (ComicRack writes
// -1 for "unset", some tools write "2016.0" or "") is 0.
func positive(s string, limit int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int(f)) {
			return 0
		}
		n = int(f)
	}
	if n < 1 || n > limit {
		return 0
	}
	return n
}
