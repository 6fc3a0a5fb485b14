package api_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// TestReaderReadsPages: a reader reads a book of its grant through the
// page routes and OPDS-PSE (0-based {pageNumber}), byte for byte the
// archive's entries, and downloads it; a book outside the grant answers
// like a missing one on every route.
func TestReaderReadsPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	mine, other := e.library("mine"), e.library("other")
	var ids []int64
	for _, l := range []struct {
		id   int64
		name string
	}{{mine, "mine"}, {other, "other"}} {
		dir := filepath.Join(e.root, l.name)
		writeBook(t, dir, "book.cbz", fixtures.KindCBZ, fixtures.Book{Pages: 3})
		ids = append(ids, e.book(l.id, dir, "book.cbz", protocol.RoleBook))
	}
	e.user("reader", "the password", mine)
	auth := basic("reader", "the password")
	a, err := archive.Open(filepath.Join(e.root, "mine", "book.cbz"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i, p := range a.Pages() {
		want, err := a.ReadEntry(p, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{fmt.Sprintf("/api/v1/files/%d/pages/%d", ids[0], i+1),
			fmt.Sprintf("/opds/v1.2/files/%d/pages/%d", ids[0], i)} {
			r := e.callAuth("GET", path, "", auth)
			if r.Code != 200 || !bytes.Equal(r.Body, want) {
				t.Fatalf("%s: %d, %d bytes, want the %d bytes of %s", path, r.Code, len(r.Body), len(want), p.Name)
			}
		}
	}
	if r := e.callAuth("GET", fmt.Sprintf("/api/v1/files/%d/download", ids[0]), "", auth); r.Code != 200 || len(r.Body) == 0 {
		t.Fatalf("download: %d, %d bytes", r.Code, len(r.Body))
	}
	for _, route := range []string{"/api/v1/files/%d/pages", "/api/v1/files/%d/pages/1", "/opds/v1.2/files/%d/pages/0", "/api/v1/files/%d/download"} {
		outside := e.callAuth("GET", fmt.Sprintf(route, ids[1]), "", auth)
		missing := e.callAuth("GET", fmt.Sprintf(route, 987654), "", auth)
		if outside.Code != 404 || outside.Code != missing.Code || outside.errCode() != missing.errCode() {
			t.Fatalf("%s outside the grant: %d %s; missing: %d %s", route, outside.Code, outside.Body, missing.Code, missing.Body)
		}
	}
}
