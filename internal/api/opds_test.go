package api_test

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// atomDoc is what a client reads of an OPDS 1.2 feed.
type atomDoc struct {
	Links   []atomLink `xml:"link"`
	Entries []struct {
		ID    string     `xml:"id"`
		Title string     `xml:"title"`
		Links []atomLink `xml:"link"`
	} `xml:"entry"`
}

type atomLink struct {
	Rel      string `xml:"rel,attr"`
	Href     string `xml:"href,attr"`
	Type     string `xml:"type,attr"`
	Count    string `xml:"http://vaemendis.net/opds-pse/ns count,attr"`
	LastRead string `xml:"http://vaemendis.net/opds-pse/ns lastRead,attr"`
}

// opdsLibraryFixture: lib a holds series "Saga" (60 books, more than a
// feed page) and "Paper Girls" (2), lib b a secret series.
func opdsLibraryFixture(e *env) (a, b int64, saga []int64, secret int64) {
	a, b = e.library("a"), e.library("b")
	for i := 1; i <= 60; i++ {
		saga = append(saga, e.file(a, fmt.Sprintf("Saga/Saga %d.cbz", i)))
	}
	e.series(a, "Saga", saga...)
	e.series(a, "Paper Girls", e.file(a, "Paper Girls/PG 1.cbz"), e.file(a, "Paper Girls/PG 2.cbz"))
	secret = e.file(b, "Secret/Secret 1.cbz")
	e.series(b, "Secret", secret)
	return a, b, saga, secret
}

// TestOPDSWalk follows every catalog link from the root as a reader app
// does and checks what it finds: each book of the grant once per list,
// none outside it, paging, PSE and acquisition links.
func TestOPDSWalk(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, _, saga, secret := opdsLibraryFixture(e)
	e.user("ann", "ann's password", a)
	ann := basic("ann", "ann's password")
	e.expect(e.callAuth("PUT", fmt.Sprintf("/api/v1/me/progress/%d", saga[0]), `{"page":5}`, ann), 200, "")
	seen, books := map[string]bool{}, map[string]int{}
	for _, f := range walkOPDS(t, e, ann, "/opds/v1.2/catalog") {
		seen[f.url] = true
		for _, en := range f.doc.Entries {
			if strings.HasPrefix(en.ID, "urn:bindery:file:") {
				books[en.ID]++
				checkBookLinks(t, en.ID, en.Links)
			}
		}
	}
	if books[fmt.Sprintf("urn:bindery:file:%d", secret)] > 0 {
		t.Fatal("a book outside the grant is in the catalog")
	}
	for _, id := range saga {
		if books[fmt.Sprintf("urn:bindery:file:%d", id)] == 0 {
			t.Fatalf("book %d never reached from the root", id)
		}
	}
	if !slices.ContainsFunc(keys(seen), func(k string) bool { return strings.Contains(k, "page=2") }) {
		t.Fatalf("no second page followed: %v", keys(seen))
	}
	// Progress shows as PSE lastRead (0-based) in continue reading.
	var d atomDoc
	r := e.callAuth("GET", "/opds/v1.2/continue-reading", "", ann)
	if err := xml.Unmarshal(r.Body, &d); err != nil || len(d.Entries) != 1 {
		t.Fatalf("continue reading: %v %s", err, r.Body)
	}
	if l := streamLink(d.Entries[0].Links); l.LastRead != "4" || l.Count != "12" {
		t.Fatalf("stream link %+v", l)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// walkedFeed is one OPDS 1.2 feed a walk fetched.
type walkedFeed struct {
	url  string
	body []byte
	doc  atomDoc
}

// walkOPDS fetches the feeds at start as a reader app does and follows
// every catalog link (navigation, paging, subsections) breadth first,
// each feed once, checking each is an OPDS catalog feed that parses.
func walkOPDS(t *testing.T, e *env, auth string, start ...string) []walkedFeed {
	t.Helper()
	var out []walkedFeed
	seen, queue := map[string]bool{}, start
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		r := e.callAuth("GET", u, "", auth)
		e.expect(r, 200, "")
		if ct := r.Hdr.Get("Content-Type"); !strings.Contains(ct, "profile=opds-catalog") {
			t.Fatalf("%s: content type %q", u, ct)
		}
		f := walkedFeed{url: u, body: r.Body}
		if err := xml.Unmarshal(r.Body, &f.doc); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		out = append(out, f)
		for _, l := range f.doc.Links {
			if strings.Contains(l.Type, "opds-catalog") && l.Rel != "self" {
				queue = append(queue, l.Href)
			}
		}
		for _, en := range f.doc.Entries {
			for _, l := range en.Links {
				if strings.Contains(l.Type, "opds-catalog") {
					queue = append(queue, l.Href)
				}
			}
		}
	}
	return out
}

func streamLink(ls []atomLink) atomLink {
	for _, l := range ls {
		if l.Rel == "http://vaemendis.net/opds-pse/stream" {
			return l
		}
	}
	return atomLink{}
}

func checkBookLinks(t *testing.T, id string, ls []atomLink) {
	t.Helper()
	n := strings.TrimPrefix(id, "urn:bindery:file:")
	var download bool
	for _, l := range ls {
		if l.Rel == "http://opds-spec.org/acquisition" {
			download = l.Href == "/api/v1/files/"+n+"/download" && l.Type == "application/vnd.comicbook+zip"
		}
	}
	s := streamLink(ls)
	if !download || s.Count != "12" || !strings.Contains(s.Href, "{pageNumber}") || !strings.Contains(s.Href, "{maxWidth}") {
		t.Fatalf("book %s links %+v", id, ls)
	}
}

func TestOPDSSearch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, _, _, _ := opdsLibraryFixture(e)
	e.user("ann", "ann's password", a)
	ann := basic("ann", "ann's password")
	r := e.callAuth("GET", "/opds/v1.2/search.xml", "", ann)
	e.expect(r, 200, "")
	if !strings.Contains(string(r.Body), `template="/opds/v1.2/search?q={searchTerms}"`) {
		t.Fatalf("opensearch %s", r.Body)
	}
	for q, want := range map[string]int{"paper": 2, "PG 2": 1, "secret": 0, "saga 1": 11} {
		var d atomDoc
		r := e.callAuth("GET", "/opds/v1.2/search?q="+url.QueryEscape(q), "", ann)
		e.expect(r, 200, "")
		if err := xml.Unmarshal(r.Body, &d); err != nil || len(d.Entries) != want {
			t.Fatalf("search %q: %d entries, want %d (%v)", q, len(d.Entries), want, err)
		}
	}
	// A series search goes through the search index: every word, in any
	// order, the last a prefix; never a substring inside a word, never a
	// series outside the grant.
	for q, want := range map[string]string{"girls": "Paper Girls", "girls pap": "Paper Girls", "SAGA": "Saga",
		"aper": "", "secret": "", "saga girls": ""} {
		var d atomDoc
		r := e.callAuth("GET", "/opds/v1.2/series?q="+url.QueryEscape(q), "", ann)
		e.expect(r, 200, "")
		if err := xml.Unmarshal(r.Body, &d); err != nil {
			t.Fatal(err)
		}
		if (want == "" && len(d.Entries) != 0) || (want != "" && (len(d.Entries) != 1 || d.Entries[0].Title != want)) {
			t.Fatalf("series search %q: %+v, want %q", q, d.Entries, want)
		}
	}
	e.expect(e.callAuth("GET", "/opds/v1.2/series?q=%21%3F", "", ann), 400, "invalid_query")
	e.expect(e.callAuth("GET", "/opds/v1.2/series?q=a&q=b", "", ann), 400, "invalid_query")
	var d atomDoc
	// A ComicInfo title is the entry's title, and searched.
	pg := e.file(a, "Paper Girls/PG 3.cbz")
	if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO file_metadata (file_id, source, title, updated_at) VALUES (?, 'comicinfo', 'The Bridge', ?)`,
		pg, e.now()); err != nil {
		t.Fatal(err)
	}
	d = atomDoc{}
	xml.Unmarshal(e.callAuth("GET", "/opds/v1.2/search?q=bridge", "", ann).Body, &d)
	if len(d.Entries) != 1 || d.Entries[0].Title != "The Bridge" {
		t.Fatalf("title search %+v", d.Entries)
	}
	e.expect(e.callAuth("GET", "/opds/v1.2/search", "", ann), 400, "invalid_query")
	e.expect(e.callAuth("GET", "/opds/v1.2/recent?page=0", "", ann), 400, "invalid_parameter")
	e.expect(e.callAuth("GET", "/opds/v1.2/catalog", "", ""), 401, "unauthorized")
}
