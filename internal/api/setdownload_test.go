package api_test

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"mime"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// volumeBook inserts the row the scanner writes for a multi-volume RAR
// book: its first volume's, with the count of volumes.
func (e *env) volumeBook(lib int64, dir, first string, volumes int) int64 {
	e.t.Helper()
	id := e.book(lib, dir, first, protocol.RoleBook)
	e.exec(`UPDATE library_files SET volumes = ? WHERE id = ?`, volumes, id)
	return id
}

// readCBZ opens a downloaded cbz with archive/zip and returns its entries'
// names and contents in zip order.
func readCBZ(t *testing.T, body []byte) (names []string, data [][]byte) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("the download is no zip: %v", err)
	}
	for _, f := range zr.File {
		if f.Method != zip.Store {
			t.Fatalf("%s: method %d, want stored", f.Name, f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC-32 at the end
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		names, data = append(names, f.Name), append(data, b)
	}
	return names, data
}

// wantPages is what the archive package reads of the book at path: its
// pages in page order, then its ComicInfo.xml when it has one.
func wantPages(t *testing.T, path string) (names []string, data [][]byte) {
	t.Helper()
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, p := range a.Pages() {
		b, err := a.ReadEntry(p, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		names, data = append(names, p.Name), append(data, b)
	}
	if info, ok, err := a.ComicInfo(); err != nil {
		t.Fatal(err)
	} else if ok {
		names, data = append(names, "ComicInfo.xml"), append(data, info)
	}
	return names, data
}

// unarEntry is entry name of the archive at path as unar extracts it.
func unarEntry(t *testing.T, path, name string) []byte {
	t.Helper()
	if _, err := exec.LookPath("unar"); err != nil {
		testutil.SkipUnlessCI(t, "unar is not installed")
	}
	out := t.TempDir()
	if b, err := exec.Command("unar", "-q", "-D", "-o", out, path, name).CombinedOutput(); err != nil {
		t.Fatalf("unar %s %s: %v %s", path, name, err, b)
	}
	data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkSetDownload downloads the set's book and checks the cbz: headers,
// and every entry byte-identical, in page order, to what the archive
// package reads and (withUnar) what unar extracts.
func checkSetDownload(t *testing.T, e *env, id int64, first, wantName string, withUnar bool) []byte {
	t.Helper()
	url := fmt.Sprintf("/api/v1/files/%d/download", id)
	r := e.get(url)
	e.expect(r, 200, "")
	if ct := r.Hdr.Get("Content-Type"); ct != "application/vnd.comicbook+zip" {
		t.Fatalf("Content-Type %q", ct)
	}
	if d := r.Hdr.Get("Content-Disposition"); d != mime.FormatMediaType("attachment", map[string]string{"filename": wantName}) {
		t.Fatalf("Content-Disposition %q, want %s", d, wantName)
	}
	if cl := r.Hdr.Get("Content-Length"); cl != strconv.Itoa(len(r.Body)) {
		t.Fatalf("Content-Length %s, body %d bytes", cl, len(r.Body))
	}
	names, data := readCBZ(t, r.Body)
	wnames, wdata := wantPages(t, first)
	if !slices.Equal(names, wnames) {
		t.Fatalf("entries %q, want %q", names, wnames)
	}
	for i := range names {
		if !bytes.Equal(data[i], wdata[i]) {
			t.Fatalf("%s differs from the archive's entry", names[i])
		}
		if withUnar && names[i] != "ComicInfo.xml" && !bytes.Equal(data[i], unarEntry(t, first, names[i])) {
			t.Fatalf("%s differs from what unar extracts", names[i])
		}
	}
	etag := r.Hdr.Get("ETag")
	e.expect(e.get(url, "If-None-Match", etag), 304, "")
	if again := e.get(url); again.Hdr.Get("ETag") != etag || !bytes.Equal(again.Body, r.Body) {
		t.Fatal("a second download differs from the first")
	}
	return r.Body
}

// TestDownloadVolumeSetShared downloads the shared fixtures' real RAR
// sets (sharpcompress's, made by WinRAR: RAR 2.x old naming, RAR 4, RAR 5
// and a solid RAR 5, six or seven volumes each), copied into a library.
// unar 1.10 cannot extract the solid set ("Attempted to read more data
// than was available", every entry), so that one is checked against the
// archive package alone, whose RAR reader verifies each entry's checksum.
func TestDownloadVolumeSetShared(t *testing.T) {
	t.Parallel()
	src := testutil.SharedFixture(t, "realworld", "sharpcompress")
	e := setup(t)
	lib := e.library("sets")
	dir := filepath.Join(e.root, "sets")
	for _, set := range []struct {
		glob, first, cbz string
		unar             bool
	}{
		{"Rar2.multi.*", "Rar2.multi.rar", "Rar2.multi.cbz", true},
		{"Rar.multi.part*.rar", "Rar.multi.part01.rar", "Rar.multi.cbz", true},
		{"Rar4.multi.part*.rar", "Rar4.multi.part01.rar", "Rar4.multi.cbz", true},
		{"Rar5.multi.part*.rar", "Rar5.multi.part01.rar", "Rar5.multi.cbz", true},
		{"Rar.multi.solid.part*.rar", "Rar.multi.solid.part01.rar", "Rar.multi.solid.cbz", false},
	} {
		vols, err := filepath.Glob(filepath.Join(src, set.glob))
		if err != nil || len(vols) < 2 {
			t.Fatalf("%s: %d volumes (%v)", set.glob, len(vols), err)
		}
		for _, v := range vols {
			if err := fixtures.CopyFile(v, filepath.Join(dir, filepath.Base(v))); err != nil {
				t.Fatal(err)
			}
		}
		id := e.volumeBook(lib, dir, set.first, len(vols))
		checkSetDownload(t, e, id, filepath.Join(dir, set.first), set.cbz, set.unar)
	}
}

// TestDownloadVolumeSet downloads generated RAR 4 and RAR 5 sets of 12
// pages and a ComicInfo.xml, stored in reverse order across three
// volumes: the cbz has them in page order. A change to a later volume
// changes the ETag; a single-volume RAR still downloads as itself.
func TestDownloadVolumeSet(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("sets")
	dir := filepath.Join(e.root, "sets")
	files, err := fixtures.Book{Pages: 12, Info: &fixtures.ComicInfo{Series: "Ōoku", Title: "The Inner Chambers"}}.Files()
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(files)
	for _, v5 := range []bool{false, true} {
		stem := fmt.Sprintf("Ōoku v%t", v5)
		vols := fixtures.RAR4Volumes(files, 3)
		if v5 {
			vols = fixtures.RAR5Volumes(files, 3)
		}
		for i, v := range vols {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("%s.part%d.rar", stem, i+1)), v)
		}
		first := filepath.Join(dir, stem+".part1.rar")
		id := e.volumeBook(lib, dir, filepath.Base(first), 3)
		body := checkSetDownload(t, e, id, first, stem+".cbz", true)
		if names, _ := readCBZ(t, body); len(names) != 13 || names[0] != "page 1.jpg" || names[12] != "ComicInfo.xml" {
			t.Fatalf("entries %q", names)
		}

		url := fmt.Sprintf("/api/v1/files/%d/download", id)
		etag := e.get(url).Hdr.Get("ETag")
		pageURL := fmt.Sprintf("/api/v1/files/%d/pages/12", id)
		page := e.get(pageURL)
		later := filepath.Join(dir, stem+".part3.rar")
		writeFile(t, later, append(vols[2], 0)) // a longer last volume
		if r := e.get(url, "If-None-Match", etag); r.Code != 200 || r.Hdr.Get("ETag") == etag {
			t.Fatalf("after a later volume changed: %d, ETag %s", r.Code, r.Hdr.Get("ETag"))
		}
		writeFile(t, later, vols[2])
		// A page's version is the set's too: after the last volume was
		// rewritten, the page is no longer the one the client holds, and
		// the open book is not reused.
		if r := e.get(pageURL, "If-None-Match", page.Hdr.Get("ETag")); r.Code != 200 || r.Hdr.Get("ETag") == page.Hdr.Get("ETag") || !bytes.Equal(r.Body, page.Body) {
			t.Fatalf("page 12 after the last volume was rewritten: %d, ETag %s (was %s)", r.Code, r.Hdr.Get("ETag"), page.Hdr.Get("ETag"))
		}
	}

	single := filepath.Join(dir, "One.cbr")
	writeFile(t, single, fixtures.RAR5(files))
	id := e.book(lib, dir, "One.cbr", protocol.RoleBook)
	r := e.get(fmt.Sprintf("/api/v1/files/%d/download", id), "Range", "bytes=10-")
	want, _ := os.ReadFile(single)
	if r.Code != 206 || !bytes.Equal(r.Body, want[10:]) || r.Hdr.Get("Content-Type") != "application/vnd.comicbook-rar" {
		t.Fatalf("single volume: %d, %d bytes, %s", r.Code, len(r.Body), r.Hdr.Get("Content-Type"))
	}

	// The OPDS acquisition links say what the download is.
	var d atomDoc
	if err := xml.Unmarshal(e.get("/opds/v1.2/recent").Body, &d); err != nil || len(d.Entries) != 3 {
		t.Fatalf("recent: %v, %d entries", err, len(d.Entries))
	}
	for _, en := range d.Entries {
		wantType := "application/vnd.comicbook+zip"
		if en.ID == fmt.Sprintf("urn:bindery:file:%d", id) {
			wantType = "application/vnd.comicbook-rar"
		}
		if !slices.ContainsFunc(en.Links, func(l atomLink) bool {
			return l.Rel == "http://opds-spec.org/acquisition" && l.Type == wantType
		}) {
			t.Fatalf("%s: no acquisition link of type %s: %+v", en.Title, wantType, en.Links)
		}
	}
}

// TestDownloadVolumeSetBad: a set missing a volume is media_unreadable
// (archive_incomplete) before anything is sent; a set whose page data is
// corrupt (a stored page's bytes flipped in the second volume) ends the
// response short of its Content-Length, so that the client sees it fail.
func TestDownloadVolumeSetBad(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("sets")
	dir := filepath.Join(e.root, "sets")
	files, err := fixtures.Book{Pages: 6}.Files()
	if err != nil {
		t.Fatal(err)
	}
	vols := fixtures.RAR5Volumes(files, 3)
	for i, v := range vols {
		if i != 1 {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("Gap.part%d.rar", i+1)), v)
		}
	}
	gap := e.volumeBook(lib, dir, "Gap.part1.rar", 3)
	r := e.get(fmt.Sprintf("/api/v1/files/%d/download", gap))
	e.expect(r, 422, "media_unreadable")

	bad := slices.Clone(vols[1])
	at := -1
	for _, f := range files {
		if len(f.Data) > 300 && at < 0 {
			if i := bytes.Index(bad, f.Data[200:264]); i >= 0 {
				at = i + 10 // inside a page's stored data, not a header
			}
		}
	}
	if at < 0 {
		t.Fatal("no page data found in the second volume")
	}
	bad[at] ^= 0xff
	for i, v := range [][]byte{vols[0], bad, vols[2]} {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("Bad.part%d.rar", i+1)), v)
	}
	id := e.volumeBook(lib, dir, "Bad.part1.rar", 3)
	r = e.get(fmt.Sprintf("/api/v1/files/%d/download", id))
	cl, _ := strconv.Atoi(r.Hdr.Get("Content-Length"))
	if r.Code != 200 || cl <= len(r.Body) {
		t.Fatalf("corrupt set: %d, Content-Length %d, %d bytes sent", r.Code, cl, len(r.Body))
	}
}
