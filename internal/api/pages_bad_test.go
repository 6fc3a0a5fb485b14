package api_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// hugePNG is a PNG whose header claims w×h pixels and holds none: a
// decoder that trusted it would allocate w×h×3 bytes.
func hugePNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustZip(t *testing.T, method uint16, files ...fixtures.File) []byte {
	t.Helper()
	data, err := fixtures.Zip(files, method)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPageBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	dir := filepath.Join(e.root, "comics")
	writeBook(t, dir, "ok.cbz", fixtures.KindCBZ, fixtures.Book{Pages: 3})
	ok := e.book(lib, dir, "ok.cbz", protocol.RoleBook)
	jpg, err := fixtures.Image(fixtures.JPEG, 300, 400, 7)
	if err != nil {
		t.Fatal(err)
	}
	// A deflated page with a byte of its compressed data flipped: the
	// zip's CRC (or the inflater) catches it.
	corrupt := mustZip(t, zip.Deflate, fixtures.File{Name: "1.jpg", Data: jpg}, fixtures.File{Name: "2.jpg", Data: jpg})
	corrupt[len(corrupt)/4] ^= 0x55
	writeFile(t, filepath.Join(dir, "corrupt.cbz"), corrupt)
	bad := e.book(lib, dir, "corrupt.cbz", protocol.RoleBook)
	// 64 MiB of zeros deflates to 64 KiB: over a 1 MiB page limit.
	writeFile(t, filepath.Join(dir, "bomb.cbz"), mustZip(t, zip.Deflate, fixtures.File{Name: "1.jpg", Data: make([]byte, 64<<20)}))
	bomb := e.book(lib, dir, "bomb.cbz", protocol.RoleBook)
	writeFile(t, filepath.Join(dir, "pixels.cbz"), mustZip(t, zip.Store, fixtures.File{Name: "1.png", Data: hugePNG(100000, 100000)}))
	pixels := e.book(lib, dir, "pixels.cbz", protocol.RoleBook)
	enc, err := fixtures.EncryptedZip([]fixtures.File{{Name: "1.jpg", Data: jpg}}, "pw")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "enc.cbz"), enc)
	locked := e.book(lib, dir, "enc.cbz", protocol.RoleBook)
	writeBook(t, dir, "gone.cbz", fixtures.KindCBZ, fixtures.Book{})
	gone := e.book(lib, dir, "gone.cbz", protocol.RoleBook)
	if err := os.Remove(filepath.Join(dir, "gone.cbz")); err != nil {
		t.Fatal(err)
	}
	video := e.file(lib, "clip.mkv")
	e.exec(`UPDATE library_files SET format = 'video' WHERE id = ?`, video)
	writeFile(t, filepath.Join(dir, "art", "cover.jpg"), jpg)
	sidecar := e.book(lib, dir, "art/cover.jpg", protocol.RoleSidecar)
	outside := filepath.Join(t.TempDir(), "secret.cbz")
	writeBook(t, filepath.Dir(outside), "secret.cbz", fixtures.KindCBZ, fixtures.Book{})
	if err := os.Symlink(outside, filepath.Join(dir, "link.cbz")); err != nil {
		t.Fatal(err)
	}
	link := e.book(lib, dir, "link.cbz", protocol.RoleBook)
	e.expect(e.call("PATCH", "/api/v1/settings", `{"thumbnail.max_source_mb":"1"}`), 200, "")

	for _, c := range []struct {
		target string
		status int
		code   string
	}{
		{"/api/v1/files/abc/pages", 400, "invalid_parameter"},
		{"/api/v1/files/0/pages/1", 400, "invalid_parameter"},
		{"/api/v1/files/999999/pages", 404, "file_not_found"},
		{"/api/v1/files/999999/pages/1", 404, "file_not_found"},
		{"/api/v1/files/999999/download", 404, "file_not_found"},
		{"/api/v1/files/-1/download", 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/0", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/x", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/01", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1.5", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/4", ok), 404, "page_not_found"},
		{fmt.Sprintf("/api/v1/files/%d/pages/99999999999999999999", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1?width=0", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1?width=abc", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1?width=16385", ok), 400, "invalid_parameter"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1", bad), 422, "media_unreadable"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1", bomb), 422, "media_too_large"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1?width=100", pixels), 422, "media_too_large"},
		{fmt.Sprintf("/api/v1/files/%d/pages", locked), 422, "media_unreadable"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1", locked), 422, "media_unreadable"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1", gone), 404, "media_missing"},
		{fmt.Sprintf("/api/v1/files/%d/download", gone), 404, "media_missing"},
		{fmt.Sprintf("/api/v1/files/%d/pages", video), 409, "not_a_book"},
		{fmt.Sprintf("/api/v1/files/%d/download", link), 422, "media_unreadable"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1", link), 422, "media_unreadable"},
		{fmt.Sprintf("/api/v1/files/%d/pages/1", sidecar), 409, "not_a_book"},
	} {
		e.expect(e.get(c.target), c.status, c.code)
	}
	// The listing names the pages it could not read instead of failing.
	l := e.pagesOf(bomb)
	if l.Count != 1 || l.Items[0].ErrorCode == nil || *l.Items[0].ErrorCode != protocol.ErrSourceTooLarge || l.Items[0].Width != nil {
		t.Errorf("bomb listing: %+v", l.Items)
	}
	// The pixel bomb's raw bytes are served: nothing decodes them.
	e.expect(e.get(fmt.Sprintf("/api/v1/files/%d/pages/1", pixels)), 200, "")
}

func TestDownload(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	dir := filepath.Join(e.root, "comics")
	for _, c := range []struct {
		name string
		kind fixtures.Kind
		mime string
	}{
		{"Été #1.cbz", fixtures.KindCBZ, "application/vnd.comicbook+zip"},
		{"b.cbr", fixtures.KindCBR5, "application/vnd.comicbook-rar"},
		{"c.cb7", fixtures.KindCB7, "application/x-cb7"},
		{"d.jpg", fixtures.KindImage, "image/jpeg"},
	} {
		writeBook(t, dir, c.name, c.kind, fixtures.Book{Pages: 2})
		id := e.book(lib, dir, c.name, protocol.RoleBook)
		want, err := os.ReadFile(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("/api/v1/files/%d/download", id)
		r := e.get(url)
		e.expect(r, 200, "")
		if !bytes.Equal(r.Body, want) || r.Hdr.Get("Content-Type") != c.mime {
			t.Errorf("%s: %d bytes of %d, %s", c.name, len(r.Body), len(want), r.Hdr.Get("Content-Type"))
		}
		if d := r.Hdr.Get("Content-Disposition"); d == "" || (c.name == "b.cbr" && d != `attachment; filename=b.cbr`) {
			t.Errorf("%s: Content-Disposition %q", c.name, d)
		}
		e.expect(e.get(url, "If-None-Match", r.Hdr.Get("ETag")), 304, "")
		part := e.get(url, "Range", "bytes=4-")
		if part.Code != 206 || !bytes.Equal(part.Body, want[4:]) {
			t.Errorf("%s: range %d", c.name, part.Code)
		}
		e.expect(e.get(url, "Range", fmt.Sprintf("bytes=%d-", len(want)+1)), 416, "")
	}
	folder := filepath.Join(dir, "Folder Book")
	jpg, _ := fixtures.Image(fixtures.JPEG, 40, 60, 1)
	writeFile(t, filepath.Join(folder, "p1.jpg"), jpg)
	fb := e.book(lib, dir, "Folder Book", protocol.RoleFolder)
	e.expect(e.get(fmt.Sprintf("/api/v1/files/%d/download", fb)), 409, "not_downloadable")
	r := e.get(fmt.Sprintf("/api/v1/files/%d/pages/1", fb))
	if r.Code != 200 || !bytes.Equal(r.Body, jpg) {
		t.Errorf("folder book page 1: %d", r.Code)
	}
}

func TestFilesListBooksByDefault(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	dir := filepath.Join(e.root, "comics")
	jpg, _ := fixtures.Image(fixtures.JPEG, 40, 60, 1)
	writeFile(t, filepath.Join(dir, "F", "p1.jpg"), jpg)
	writeFile(t, filepath.Join(dir, "cover.jpg"), jpg)
	writeBook(t, dir, "a.cbz", fixtures.KindCBZ, fixtures.Book{})
	ids := map[string]int64{
		"book":    e.book(lib, dir, "a.cbz", protocol.RoleBook),
		"folder":  e.book(lib, dir, "F", protocol.RoleFolder),
		"page":    e.book(lib, dir, "F/p1.jpg", protocol.RolePage),
		"sidecar": e.book(lib, dir, "cover.jpg", protocol.RoleSidecar),
	}
	for q, want := range map[string][]string{
		"":              {"book", "folder"},
		"?role=book":    {"book", "folder"},
		"?role=page":    {"page"},
		"?role=sidecar": {"sidecar"},
		"?role=all":     {"book", "folder", "page", "sidecar"},
		"?sort=id":      {"book", "folder"},
	} {
		r := e.get("/api/v1/files" + q)
		e.expect(r, 200, "")
		var page struct{ Items []struct{ ID int64 } }
		r.decode(t, &page)
		got := map[int64]bool{}
		for _, it := range page.Items {
			got[it.ID] = true
		}
		if len(got) != len(want) {
			t.Errorf("%q: %d files, want %v", q, len(got), want)
		}
		for _, w := range want {
			if !got[ids[w]] {
				t.Errorf("%q: %s missing", q, w)
			}
		}
	}
	e.expect(e.get("/api/v1/files?role=pages"), 400, "invalid_parameter")
}
