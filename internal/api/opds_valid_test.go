package api_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// The OPDS 1.2 schema of the shared fixtures lost the backslashes of one
// XSD pattern: its atomUri override excludes `[ <>{}|^`"\nrt]`, that is
// the letters r and t, so every http URI and urn fails it. The pattern
// was `[ <>{}|^`"\\\n\r\t]`: the characters RFC 3987 keeps out of an IRI
// (space < > { } | ^ ` " and the backslash) plus newline, carriage return
// and tab; one level of backslash unescaping turns that into exactly what
// the fixture says. opdsSchemaFix restores those four backslashes and
// changes nothing else.
var opdsSchemaFix = strings.NewReplacer("|^`\"\\nrt]", "|^`\"\\\\\\n\\r\\t]")

// opdsSchemaDir is a temporary folder holding the shared opds.rnc, with
// its pattern corrected, beside RFC 4287's atom.rnc (testdata/atom), which
// it includes. It skips without ../shared; without jing it skips, or
// fails under CI.
func opdsSchemaDir(t *testing.T) string {
	t.Helper()
	src := testutil.SharedFixture(t, "opds", "schema", "1.2", "opds.rnc")
	if _, err := exec.LookPath("jing"); err != nil {
		testutil.SkipUnlessCI(t, "jing is not installed (scripts/deps.sh installs it)")
	}
	rnc, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	fixed := opdsSchemaFix.Replace(string(rnc))
	if strings.Count(fixed, `\\\n\r\t]`) != 1 {
		t.Fatalf("%s: the atomUri pattern to correct is not there once; has the fixture changed?", src)
	}
	atom, err := os.ReadFile(filepath.Join("testdata", "atom", "atom.rnc"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"opds.rnc": fixed, "atom.rnc": string(atom)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// expandPSE fills a feed's PSE stream templates as a reader app does
// ({pageNumber} → 0, {maxWidth} → 1200). OPDS-PSE puts a URI template in
// the stream link's href, which apps fill by replacing those literal
// strings; braces are outside what an IRI may hold, so the schema rejects
// the template itself. It can check the URI the template yields, which is
// what is validated.
var expandPSE = strings.NewReplacer("{pageNumber}", "0", "{maxWidth}", "1200")

// jingValidate runs jing once over every feed, its PSE templates expanded
// (a JVM start per feed would dominate the test), and fails naming each
// feed it rejects.
func jingValidate(t *testing.T, schemaDir string, feeds []walkedFeed) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"120", "jing", "-c", filepath.Join(schemaDir, "opds.rnc")}
	byFile := map[string]walkedFeed{}
	for i, f := range feeds {
		name := filepath.Join(dir, fmt.Sprintf("feed%03d.xml", i))
		if err := os.WriteFile(name, []byte(expandPSE.Replace(string(f.body))), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name)
		byFile[name] = f
	}
	out, err := exec.Command("timeout", args...).CombinedOutput()
	if err == nil {
		return
	}
	for name, f := range byFile {
		if bytes.Contains(out, []byte(name)) {
			t.Errorf("jing rejects %s:\n%s", f.url, f.body)
		}
	}
	t.Fatalf("jing: %v\n%s", err, out)
}

// TestOPDSFeedsValidate walks a catalog from its root, its search results
// and a series search, every feed reached (navigation, continue reading,
// on deck, recent, libraries, series, next/previous/first pages), and
// validates each against the OPDS 1.2 RELAX NG schema with jing.
func TestOPDSFeedsValidate(t *testing.T) {
	t.Parallel()
	schema := opdsSchemaDir(t)
	e := setup(t)
	a, _, saga, _ := opdsLibraryFixture(e)
	odd := e.file(a, "Ōoku & <Friends>/Ōoku \"1\" {x}.cbz")
	e.series(a, `Ōoku & <Friends> "100%"`, odd)
	e.user("ann", "ann's password", a)
	ann := basic("ann", "ann's password")
	e.expect(e.callAuth("PUT", fmt.Sprintf("/api/v1/me/progress/%d", saga[0]), `{"page":5}`, ann), 200, "")
	e.readyCover(a, saga[1])

	feeds := walkOPDS(t, e, ann, "/opds/v1.2/catalog", "/opds/v1.2/search?q=saga",
		"/opds/v1.2/search?q=%C5%8Coku", "/opds/v1.2/series?q=girls")
	kinds := map[string]bool{}
	for _, f := range feeds {
		path, _, _ := strings.Cut(f.url, "?")
		kinds[path] = true
		if strings.Contains(f.url, "page=2") {
			kinds["page 2 of "+path] = true
		}
	}
	for _, want := range []string{"/opds/v1.2/catalog", "/opds/v1.2/continue-reading", "/opds/v1.2/on-deck",
		"/opds/v1.2/recent", "/opds/v1.2/series", fmt.Sprintf("/opds/v1.2/libraries/%d", a), "/opds/v1.2/search",
		"page 2 of /opds/v1.2/search", "page 2 of /opds/v1.2/recent"} {
		if !kinds[want] {
			t.Fatalf("the walk never reached %s: %v", want, kinds)
		}
	}
	jingValidate(t, schema, feeds)
}

// TestOPDSSchemaRejects proves the validation can fail: a feed without
// its id, and one whose link href carries a space, are rejected.
func TestOPDSSchemaRejects(t *testing.T) {
	t.Parallel()
	schema := opdsSchemaDir(t)
	e := setup(t)
	e.user("ann", "ann's password", e.library("a"))
	good := e.callAuth("GET", "/opds/v1.2/catalog", "", basic("ann", "ann's password"))
	e.expect(good, 200, "")
	noID := bytes.Replace(good.Body, []byte("<id>urn:bindery:opds:/catalog</id>"), nil, 1)
	space := bytes.Replace(good.Body, []byte(`href="/opds/v1.2/search.xml"`), []byte(`href="/opds/v1.2/search .xml"`), 1)
	if bytes.Equal(noID, good.Body) || bytes.Equal(space, good.Body) {
		t.Fatalf("the catalog no longer has what this test removes:\n%s", good.Body)
	}
	for name, body := range map[string][]byte{"no id": noID, "space in href": space} {
		f := filepath.Join(t.TempDir(), "feed.xml")
		if err := os.WriteFile(f, body, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("timeout", "120", "jing", "-c", filepath.Join(schema, "opds.rnc"), f).CombinedOutput()
		if err == nil {
			t.Fatalf("%s: jing accepted an invalid feed", name)
		}
		if !strings.Contains(string(out), "feed.xml") {
			t.Fatalf("%s: jing failed without naming the feed: %v %s", name, err, out)
		}
	}
}

// readyCover gives a book a rendered cover (a ready thumbnails row and its
// file under the state folder), as workerd leaves one.
func (e *env) readyCover(lib, file int64) {
	e.t.Helper()
	rel := fmt.Sprintf("covers/%03d/%d.webp", file%256, file)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(e.state, rel)), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.state, rel), []byte("RIFF\x00\x00\x00\x00WEBPVP8 cover"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, created_at, updated_at)
		VALUES (?, ?, ?, 'ready', 'webp', ?, ?, ?)`, file, lib, fmt.Sprint("library:", lib), rel, e.now(), e.now())
	e.exec(`UPDATE library_files SET cover_updated_at = 1767000000 WHERE id = ?`, file)
}
