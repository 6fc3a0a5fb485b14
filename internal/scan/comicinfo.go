package scan

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// comicInfoDoc is the part of ComicInfo.xml the scanner stores.
type comicInfoDoc struct {
	Series      string `xml:"Series"`
	Number      string `xml:"Number"`
	Volume      string `xml:"Volume"`
	Title       string `xml:"Title"`
	Year        string `xml:"Year"`
	Month       string `xml:"Month"`
	Publisher   string `xml:"Publisher"`
	Genre       string `xml:"Genre"`
	Tags        string `xml:"Tags"`
	AgeRating   string `xml:"AgeRating"`
	LanguageISO string `xml:"LanguageISO"`
	Writer      string `xml:"Writer"`
	Penciller   string `xml:"Penciller"`
	Summary     string `xml:"Summary"`
	Web         string `xml:"Web"`
	Pages       []struct {
		Image string `xml:"Image,attr"`
		Type  string `xml:"Type,attr"`
	} `xml:"Pages>Page"`
}

// parseComicInfo turns ComicInfo.xml into a metadata row and the series
// name it gives ("" when none).
func parseComicInfo(data []byte) (store.FileMetadata, string, error) {
	var doc comicInfoDoc
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := dec.Decode(&doc); err != nil {
		return store.FileMetadata{}, "", fmt.Errorf("parse ComicInfo.xml: %w", err)
	}
	m := store.FileMetadata{
		Source:      string(protocol.MetaComicInfo),
		Series:      nullStr(cleanName(doc.Series)),
		Number:      nullStr(strings.TrimSpace(doc.Number)),
		Volume:      nullInt(atoi(doc.Volume)),
		Title:       nullStr(strings.TrimSpace(doc.Title)),
		Year:        nullInt(atoi(doc.Year)),
		Month:       nullInt(atoi(doc.Month)),
		Publisher:   nullStr(cleanName(doc.Publisher)),
		Genre:       nullStr(strings.TrimSpace(doc.Genre)),
		Tags:        nullStr(strings.TrimSpace(doc.Tags)),
		AgeRating:   nullStr(strings.TrimSpace(doc.AgeRating)),
		LanguageISO: nullStr(strings.TrimSpace(doc.LanguageISO)),
		Writer:      nullStr(strings.TrimSpace(doc.Writer)),
		Penciller:   nullStr(strings.TrimSpace(doc.Penciller)),
		Summary:     nullStr(strings.TrimSpace(doc.Summary)),
		Web:         nullStr(strings.TrimSpace(doc.Web)),
	}
	for _, p := range doc.Pages {
		if strings.EqualFold(p.Type, "FrontCover") {
			if n, err := strconv.Atoi(strings.TrimSpace(p.Image)); err == nil && n >= 0 {
				m.FrontCoverPage.Int64, m.FrontCoverPage.Valid = int64(n), true
			}
			break
		}
	}
	return m, m.Series.String, nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
