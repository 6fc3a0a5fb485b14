package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pb33f/jsonschema/v6"

	"github.com/bindery-nas/bindery/internal/testutil"
)

type v2Feed struct {
	Links        []v2Link `json:"links"`
	Navigation   []v2Link `json:"navigation"`
	Publications []struct {
		Metadata struct{ Identifier string } `json:"metadata"`
		Links    []v2Link                    `json:"links"`
	} `json:"publications"`
}

type v2Link struct {
	Href, Type, Rel, Title string
	Templated              bool
}

// permissiveLoader serves the shared OPDS 2.0 schemas from disk and an
// empty (accept-all) schema for the Readium schemas they reference by
// URL, which the fixtures do not carry: the OPDS layer is checked, the
// Readium link and metadata objects are not.
type permissiveLoader struct{ dir string }

func (l permissiveLoader) Load(url string) (any, error) {
	if name, ok := strings.CutPrefix(url, "https://specs.opds.io/schema/"); ok {
		f, err := os.Open(filepath.Join(l.dir, name))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return jsonschema.UnmarshalJSON(f)
	}
	return map[string]any{}, nil
}

func opds2Schema(t *testing.T) *jsonschema.Schema {
	dir := filepath.Join(testutil.RepoRoot(t), "..", "shared", "fixtures", "opds", "schema")
	if _, err := os.Stat(filepath.Join(dir, "feed.schema.json")); err != nil {
		t.Log("OPDS 2.0 JSON Schemas not found beside ../shared: feeds are not validated")
		return nil
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(permissiveLoader{dir})
	sch, err := c.Compile("https://specs.opds.io/schema/feed.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestOPDS2Walk walks the 2.0 catalog from its root like TestOPDSWalk,
// validating each feed against the OPDS 2.0 feed schema.
func TestOPDS2Walk(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, _, saga, secret := opdsLibraryFixture(e)
	e.user("ann", "ann's password", a)
	ann := basic("ann", "ann's password")
	e.expect(e.callAuth("PUT", fmt.Sprintf("/api/v1/me/progress/%d", saga[3]), `{"page":5}`, ann), 200, "")
	sch := opds2Schema(t)
	seen, queue, books := map[string]bool{}, []string{"/opds/v2.0/catalog"}, map[string]bool{}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		r := e.callAuth("GET", u, "", ann)
		e.expect(r, 200, "")
		if ct := r.Hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/opds+json") {
			t.Fatalf("%s: content type %q", u, ct)
		}
		if sch != nil {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(doc); err != nil {
				t.Fatalf("%s does not validate: %v\n%s", u, err, r.Body)
			}
		}
		var f v2Feed
		if err := json.Unmarshal(r.Body, &f); err != nil {
			t.Fatal(err)
		}
		for _, l := range append(f.Links, f.Navigation...) {
			if l.Type == "application/opds+json" && !l.Templated && l.Rel != "self" {
				if !strings.HasPrefix(l.Href, "/opds/v2.0/") {
					t.Fatalf("%s leaves the 2.0 tree: %s", u, l.Href)
				}
				queue = append(queue, l.Href)
			}
		}
		for _, p := range f.Publications {
			books[p.Metadata.Identifier] = true
		}
	}
	if books[fmt.Sprintf("urn:bindery:file:%d", secret)] {
		t.Fatal("a book outside the grant is in the 2.0 catalog")
	}
	for _, id := range saga {
		if !books[fmt.Sprintf("urn:bindery:file:%d", id)] {
			t.Fatalf("book %d never reached", id)
		}
	}
	if !seen["/opds/v2.0/search?q=saga"] {
		r := e.callAuth("GET", "/opds/v2.0/search?q=saga", "", ann)
		e.expect(r, 200, "")
	}
	for _, p := range []string{"libraries/x", "series/x", "series/999", "libraries/999"} {
		if r := e.callAuth("GET", "/opds/v2.0/"+p, "", ann); r.Code != 400 && r.Code != 404 {
			t.Fatalf("%s: %d", p, r.Code)
		}
	}
	for _, p := range []string{"libraries/1", "series", "series/1", "continue-reading", "on-deck", "recent", "search?q=a"} {
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		e.expect(e.callAuth("GET", "/opds/v2.0/"+p+sep+"page=0", "", ann), 400, "invalid_parameter")
	}
}
