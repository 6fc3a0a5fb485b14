// Package opds writes OPDS 1.2 catalog feeds (Atom) with the Page
// Streaming Extension, OPDS 2.0 feeds (JSON) and the OpenSearch
// description. It knows feeds, not the database: callers fill the types.
package opds

import (
	"encoding/xml"
	"io"
	"time"
)

// Namespaces and link relations of OPDS 1.2 and PSE 1.1.
const (
	NSAtom       = "http://www.w3.org/2005/Atom"
	NSOPDS       = "http://opds-spec.org/2010/catalog"
	NSPSE        = "http://vaemendis.net/opds-pse/ns"
	NSOpenSearch = "http://a9.com/-/spec/opensearch/1.1/"
	NSDC         = "http://purl.org/dc/terms/"

	RelAcquisition = "http://opds-spec.org/acquisition"
	RelImage       = "http://opds-spec.org/image"
	RelThumbnail   = "http://opds-spec.org/image/thumbnail"
	RelStream      = "http://vaemendis.net/opds-pse/stream"
	RelSortNew     = "http://opds-spec.org/sort/new"

	TypeNavigation  = "application/atom+xml;profile=opds-catalog;kind=navigation"
	TypeAcquisition = "application/atom+xml;profile=opds-catalog;kind=acquisition"
	TypeOpenSearch  = "application/opensearchdescription+xml"
)

// Feed is an OPDS 1.2 catalog feed document.
type Feed struct {
	XMLName      xml.Name `xml:"feed"`
	NS           string   `xml:"xmlns,attr"`
	NSOPDS       string   `xml:"xmlns:opds,attr"`
	NSPSE        string   `xml:"xmlns:pse,attr"`
	NSOpenSearch string   `xml:"xmlns:opensearch,attr"`
	NSDC         string   `xml:"xmlns:dcterms,attr"`
	ID           string   `xml:"id"`
	Title        string   `xml:"title"`
	Updated      string   `xml:"updated"`
	Author       Author   `xml:"author"`
	Total        *int     `xml:"opensearch:totalResults,omitempty"`
	PerPage      *int     `xml:"opensearch:itemsPerPage,omitempty"`
	Links        []Link   `xml:"link"`
	Entries      []Entry  `xml:"entry"`
}

// Author names who publishes the catalog.
type Author struct {
	Name string `xml:"name"`
	URI  string `xml:"uri,omitempty"`
}

// Link is an atom:link, with PSE's attributes on stream links.
type Link struct {
	Rel          string `xml:"rel,attr,omitempty"`
	Href         string `xml:"href,attr"`
	Type         string `xml:"type,attr,omitempty"`
	Title        string `xml:"title,attr,omitempty"`
	Count        *int64 `xml:"pse:count,attr,omitempty"`
	LastRead     *int64 `xml:"pse:lastRead,attr,omitempty"`
	LastReadDate string `xml:"pse:lastReadDate,attr,omitempty"`
}

// Entry is a navigation or acquisition entry.
type Entry struct {
	Title   string   `xml:"title"`
	ID      string   `xml:"id"`
	Updated string   `xml:"updated"`
	Authors []Author `xml:"author,omitempty"`
	Issued  string   `xml:"dcterms:issued,omitempty"`
	Lang    string   `xml:"dcterms:language,omitempty"`
	Content *Content `xml:"content,omitempty"`
	Links   []Link   `xml:"link"`
}

// Content is a plain-text atom:content.
type Content struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

// Text is a plain-text content.
func Text(s string) *Content {
	if s == "" {
		return nil
	}
	return &Content{Type: "text", Text: s}
}

// Time is an Atom date (RFC 3339, UTC).
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// NewFeed is a feed with the namespaces, id, title and update time set.
func NewFeed(id, title string, updated time.Time) *Feed {
	return &Feed{NS: NSAtom, NSOPDS: NSOPDS, NSPSE: NSPSE, NSOpenSearch: NSOpenSearch, NSDC: NSDC,
		ID: id, Title: title, Updated: Time(updated), Author: Author{Name: "Bindery"}}
}

// Write renders the feed as an XML document.
func (f *Feed) Write(w io.Writer) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	return enc.Encode(f)
}

// OpenSearchDescription is the OpenSearch 1.1 description of a search.
type OpenSearchDescription struct {
	XMLName     xml.Name `xml:"OpenSearchDescription"`
	NS          string   `xml:"xmlns,attr"`
	ShortName   string   `xml:"ShortName"`
	Description string   `xml:"Description"`
	InputEnc    string   `xml:"InputEncoding"`
	OutputEnc   string   `xml:"OutputEncoding"`
	URL         osURL    `xml:"Url"`
}

type osURL struct {
	Type     string `xml:"type,attr"`
	Template string `xml:"template,attr"`
}

// Search describes a search whose results are acquisition feeds at
// template ({searchTerms} is replaced by the query).
func Search(name, description, template string) OpenSearchDescription {
	return OpenSearchDescription{NS: NSOpenSearch, ShortName: name, Description: description,
		InputEnc: "UTF-8", OutputEnc: "UTF-8", URL: osURL{Type: TypeAcquisition, Template: template}}
}

// MIME is the media type of a book file by its format: the comic book
// archive types reader apps recognise.
func MIME(format string) string {
	switch format {
	case "zip":
		return "application/vnd.comicbook+zip"
	case "rar":
		return "application/vnd.comicbook-rar"
	case "7z":
		return "application/x-cb7"
	case "video":
		return "application/octet-stream" // the container is in video_probes
	}
	return "application/zip" // a folder book is downloaded as a zip
}
