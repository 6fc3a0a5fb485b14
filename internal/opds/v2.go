package opds

import (
	"strings"
)

// OPDS 2.0 (JSON) feeds are made from the OPDS 1.2 feed of the same
// route, so both catalogs are always the same tree: navigation entries
// become navigation links, book entries publications.

// TypeV2 is the media type of OPDS 2.0 feeds.
const TypeV2 = "application/opds+json"

// V2Feed is an OPDS 2.0 feed.
type V2Feed struct {
	Metadata     V2Metadata      `json:"metadata"`
	Links        []V2Link        `json:"links"`
	Navigation   []V2Link        `json:"navigation,omitempty"`
	Publications []V2Publication `json:"publications,omitempty"`
	// Groups is empty, and present only when the feed has neither
	// navigation nor publications: the feed schema wants one of the three
	// and forbids the other two empty.
	Groups *[]struct{} `json:"groups,omitempty"`
}

// V2Metadata is a feed's metadata.
type V2Metadata struct {
	Title        string `json:"title"`
	ItemsPerPage *int   `json:"itemsPerPage,omitempty"`
	Modified     string `json:"modified,omitempty"`
}

// V2Link is a Readium Web Publication Manifest link.
type V2Link struct {
	Href       string            `json:"href"`
	Type       string            `json:"type,omitempty"`
	Rel        string            `json:"rel,omitempty"`
	Title      string            `json:"title,omitempty"`
	Templated  bool              `json:"templated,omitempty"`
	Properties *V2LinkProperties `json:"properties,omitempty"`
}

// V2LinkProperties carries a stream link's page count.
type V2LinkProperties struct {
	NumberOfItems *int64 `json:"numberOfItems,omitempty"`
}

// V2Publication is one book.
type V2Publication struct {
	Metadata V2PubMetadata `json:"metadata"`
	Links    []V2Link      `json:"links"`
	Images   []V2Link      `json:"images,omitempty"`
}

// V2PubMetadata is a publication's metadata.
type V2PubMetadata struct {
	Type        string `json:"@type"`
	Identifier  string `json:"identifier"`
	Title       string `json:"title"`
	Modified    string `json:"modified"`
	Description string `json:"description,omitempty"`
}

// ToV2 converts a 1.2 feed; from and to are the two catalogs' path
// prefixes, so that every catalog link stays in the 2.0 tree.
func ToV2(f *Feed, from, to string) V2Feed {
	out := V2Feed{Metadata: V2Metadata{Title: f.Title, ItemsPerPage: f.PerPage, Modified: f.Updated}}
	for _, l := range f.Links {
		if l.Type == TypeOpenSearch {
			out.Links = append(out.Links, V2Link{Rel: "search", Href: to + "/search{?q}", Type: TypeV2, Templated: true})
			continue
		}
		out.Links = append(out.Links, v2Link(l, from, to))
	}
	for _, e := range f.Entries {
		if strings.HasPrefix(e.ID, "urn:bindery:file:") {
			out.Publications = append(out.Publications, v2Publication(e, from, to))
			continue
		}
		for _, l := range e.Links {
			nl := v2Link(l, from, to)
			nl.Title, nl.Rel = e.Title, ""
			out.Navigation = append(out.Navigation, nl)
		}
	}
	if len(out.Navigation) == 0 && len(out.Publications) == 0 {
		out.Groups = &[]struct{}{}
	}
	return out
}

func v2Link(l Link, from, to string) V2Link {
	out := V2Link{Href: l.Href, Type: l.Type, Rel: l.Rel, Title: l.Title}
	if strings.Contains(l.Type, "profile=opds-catalog") {
		out.Type = TypeV2
	}
	if rest, ok := strings.CutPrefix(l.Href, from+"/"); ok && out.Type == TypeV2 {
		out.Href = to + "/" + rest
	}
	if l.Rel == RelStream {
		out.Templated = true
		out.Properties = &V2LinkProperties{NumberOfItems: l.Count}
	}
	return out
}

func v2Publication(e Entry, from, to string) V2Publication {
	p := V2Publication{Metadata: V2PubMetadata{Type: "http://schema.org/Book", Identifier: e.ID, Title: e.Title,
		Modified: e.Updated}}
	if e.Content != nil {
		p.Metadata.Description = e.Content.Text
	}
	for _, l := range e.Links {
		switch l.Rel {
		case RelImage:
			p.Images = append(p.Images, V2Link{Href: l.Href, Type: l.Type})
		case RelThumbnail:
		default:
			p.Links = append(p.Links, v2Link(l, from, to))
		}
	}
	return p
}
