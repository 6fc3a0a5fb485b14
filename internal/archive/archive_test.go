package archive

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// setup writes data to a file named name in a fresh temp dir.
func setup(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustZip(t *testing.T, files []fixtures.File) []byte {
	t.Helper()
	data, err := fixtures.Zip(files, zip.Deflate)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustOpen(t *testing.T, path string) Archive {
	t.Helper()
	a, err := Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", filepath.Base(path), err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func pageNames(a Archive) []string {
	var names []string
	for _, p := range a.Pages() {
		names = append(names, p.Name)
	}
	return names
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := protocol.CodeOf(err, ""); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

// pageSet is a representative comic: natural order, junk that is not a
// page, nested folders and umlauts.
func pageSet() []fixtures.File {
	img := []byte("\xff\xd8\xff not decoded by the archive layer")
	return []fixtures.File{
		{Name: "page 10.jpg", Data: img},
		{Name: "page 2.JPG", Data: img},
		{Name: "Page 1.png", Data: img},
		{Name: "__MACOSX/._page 1.png", Data: img},
		{Name: "__MACOSX/page 1.png", Data: img},
		{Name: ".hidden.jpg", Data: img},
		{Name: "sub/.DS_Store", Data: img},
		{Name: "Thumbs.db", Data: img},
		{Name: "notes.txt", Data: img},
		{Name: "extra/"},
		{Name: "extra/Über Größe 3.webp", Data: img},
		{Name: "../escape.jpg", Data: img},
		{Name: "/abs.jpg", Data: img},
		{Name: "a/../../up.jpg", Data: img},
		{Name: `C:\drive.jpg`, Data: img},
		{Name: "nul\x00.jpg", Data: img},
		{Name: "./dot/page 11.gif", Data: img},
	}
}

var wantPages = []string{"dot/page 11.gif", "extra/Über Größe 3.webp", "Page 1.png", "page 2.JPG", "page 10.jpg"}

func TestZipPages(t *testing.T) {
	a := mustOpen(t, setup(t, "book.cbz", mustZip(t, pageSet())))
	if a.Format() != protocol.FormatZip {
		t.Fatalf("format %q", a.Format())
	}
	if got := pageNames(a); !slices.Equal(got, wantPages) {
		t.Fatalf("pages %q, want %q", got, wantPages)
	}
	data, err := a.ReadEntry(a.Pages()[2], 1<<20)
	if err != nil || !bytes.HasPrefix(data, []byte("\xff\xd8\xff")) {
		t.Fatalf("read page: %v", err)
	}
	if _, ok, err := a.ComicInfo(); ok || err != nil {
		t.Fatalf("ComicInfo: ok=%v err=%v", ok, err)
	}
}

func TestComicInfoChoice(t *testing.T) {
	page := fixtures.File{Name: "p1.jpg", Data: []byte("x")}
	cases := map[string]struct {
		files []fixtures.File
		want  string // content of the chosen one, "" = none
	}{
		"root wins over earlier nested": {[]fixtures.File{{Name: "Test/ComicInfo.xml", Data: []byte("nested")}, {Name: "ComicInfo.xml", Data: []byte("root")}, page}, "root"},
		"root wins over later nested":   {[]fixtures.File{{Name: "ComicInfo.xml", Data: []byte("root")}, {Name: "Test/ComicInfo.xml", Data: []byte("nested")}, page}, "root"},
		"shallowest nested":             {[]fixtures.File{{Name: "a/b/ComicInfo.xml", Data: []byte("deep")}, {Name: "z/comicinfo.XML", Data: []byte("shallow")}, page}, "shallow"},
		"macosx copy ignored":           {[]fixtures.File{{Name: "__MACOSX/ComicInfo.xml", Data: []byte("junk")}, {Name: "x/ComicInfo.xml", Data: []byte("real")}}, "real"},
		"none":                          {[]fixtures.File{page, {Name: "ComicInfo.xml.bak", Data: []byte("no")}}, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := mustOpen(t, setup(t, "b.cbz", mustZip(t, c.files)))
			data, ok, err := a.ComicInfo()
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != c.want || ok != (c.want != "") {
				t.Fatalf("got %q ok=%v, want %q", data, ok, c.want)
			}
		})
	}
	t.Run("oversized", func(t *testing.T) {
		big := bytes.Repeat([]byte("<a/>"), MaxComicInfoSize/4+1)
		a := mustOpen(t, setup(t, "b.cbz", mustZip(t, []fixtures.File{{Name: "ComicInfo.xml", Data: big}})))
		_, _, err := a.ComicInfo()
		wantCode(t, err, protocol.ErrSourceTooLarge)
	})
}

func TestBadArchives(t *testing.T) {
	good := mustZip(t, pageSet())
	enc, err := fixtures.EncryptedZip([]fixtures.File{{Name: "p.jpg", Data: []byte("secret page")}}, "pw")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		data []byte
		code string
	}{
		"empty file":         {nil, protocol.ErrArchiveCorrupt},
		"unknown magic":      {[]byte("hello, this is not an archive"), protocol.ErrArchiveCorrupt},
		"truncated zip":      {good[:len(good)/2], protocol.ErrArchiveCorrupt},
		"zip header only":    {good[:4], protocol.ErrArchiveCorrupt},
		"encrypted zip":      {enc, protocol.ErrArchiveEncrypted},
		"truncated rar4":     {fixtures.RAR4(pageSet())[:40], protocol.ErrArchiveCorrupt},
		"rar magic only":     {[]byte("Rar!\x1a\x07\x01\x00"), protocol.ErrArchiveCorrupt},
		"7z magic only":      {[]byte("7z\xbc\xaf\x27\x1c\x00\x04"), protocol.ErrArchiveCorrupt},
		"png magic, garbage": {[]byte("\x89PNG\r\n\x1a\n"), ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := Open(setup(t, "bad.cbz", c.data))
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				a.Close()
				return
			}
			if a != nil {
				t.Fatal("got an archive with an error")
			}
			wantCode(t, err, c.code)
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := Open(filepath.Join(t.TempDir(), "nope.cbz"))
		wantCode(t, err, protocol.ErrIOError)
		_, err = Detect(filepath.Join(t.TempDir(), "nope.cbz"))
		wantCode(t, err, protocol.ErrIOError)
	})
	t.Run("unreadable file", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads everything")
		}
		p := setup(t, "x.cbz", good)
		os.Chmod(p, 0)
		_, err := Open(p)
		wantCode(t, err, protocol.ErrIOError)
	})
	t.Run("zip without images", func(t *testing.T) {
		a := mustOpen(t, setup(t, "b.cbz", mustZip(t, []fixtures.File{{Name: "readme.txt", Data: []byte("hi")}})))
		if len(a.Pages()) != 0 {
			t.Fatalf("pages %q", pageNames(a))
		}
	})
	t.Run("empty zip", func(t *testing.T) {
		a := mustOpen(t, setup(t, "b.cbz", mustZip(t, nil)))
		if len(a.Pages()) != 0 {
			t.Fatalf("pages %q", pageNames(a))
		}
	})
}

func TestReadEntryLimits(t *testing.T) {
	big := bytes.Repeat([]byte{1}, 5000)
	a := mustOpen(t, setup(t, "b.cbz", mustZip(t, []fixtures.File{{Name: "p.jpg", Data: big}})))
	p := a.Pages()[0]
	t.Run("declared size over limit", func(t *testing.T) {
		_, err := a.ReadEntry(p, 4999)
		wantCode(t, err, protocol.ErrSourceTooLarge)
	})
	t.Run("exact limit", func(t *testing.T) {
		data, err := a.ReadEntry(p, 5000)
		if err != nil || !bytes.Equal(data, big) {
			t.Fatalf("err=%v len=%d", err, len(data))
		}
	})
	t.Run("lying header", func(t *testing.T) {
		// The index claims 10 bytes; the stream has 5000.
		_, err := readBounded(bytes.NewReader(big), Entry{Name: "p.jpg", Size: 10}, 100)
		wantCode(t, err, protocol.ErrSourceTooLarge)
	})
	t.Run("foreign entry", func(t *testing.T) {
		_, err := a.ReadEntry(Entry{Name: "x", index: 99}, 100)
		wantCode(t, err, protocol.ErrArchiveCorrupt)
	})
}

func TestDetect(t *testing.T) {
	jpg, err := fixtures.Image(fixtures.JPEG, 8, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		want protocol.FileFormat
	}{
		{"zip-really.cbr", mustZip(t, pageSet()), protocol.FormatZip},
		{"rar4.cbz", fixtures.RAR4(pageSet()), protocol.FormatRar},
		{"rar5.cbr", fixtures.RAR5(pageSet()), protocol.FormatRar},
		{"pic.png", jpg, protocol.FormatImage},
		{"empty.zip", mustZip(t, nil), protocol.FormatZip},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := setup(t, c.name, c.data)
			got, err := Detect(p)
			if err != nil || got != c.want {
				t.Fatalf("Detect = %q, %v; want %q", got, err, c.want)
			}
			a := mustOpen(t, p)
			if a.Format() != c.want {
				t.Fatalf("Open format %q, want %q", a.Format(), c.want)
			}
		})
	}
}

func TestLooseImage(t *testing.T) {
	jpg, err := fixtures.Image(fixtures.JPEG, 16, 24, 2)
	if err != nil {
		t.Fatal(err)
	}
	a := mustOpen(t, setup(t, "Cover Ä.jpeg", jpg))
	if a.Format() != protocol.FormatImage || !slices.Equal(pageNames(a), []string{"Cover Ä.jpeg"}) {
		t.Fatalf("format %q pages %q", a.Format(), pageNames(a))
	}
	data, err := a.ReadEntry(a.Pages()[0], 1<<20)
	if err != nil || !bytes.Equal(data, jpg) {
		t.Fatalf("read: %v", err)
	}
	_, err = a.ReadEntry(a.Pages()[0], 10)
	wantCode(t, err, protocol.ErrSourceTooLarge)
}

func TestNames(t *testing.T) {
	for name, want := range map[string]bool{"a.JPG": true, "b.jpeg": true, "c.webp": true, "d.avif": true, "x.txt": false, "jpg": false, "a.jpg.txt": false} {
		if IsImageName(name) != want {
			t.Errorf("IsImageName(%q) = %v", name, !want)
		}
	}
	for in, want := range map[string]string{"./a/./b.jpg": "a/b.jpg", `a\b.jpg`: "a/b.jpg", "a//b": "a/b", "../x": "", "/x": "", "x/..": "", "c:x": "", "a\x00": ""} {
		got, ok := cleanName(in)
		if got != want || ok != (want != "") {
			t.Errorf("cleanName(%q) = %q, %v", in, got, ok)
		}
	}
	if !isJunk("a/__MACOSX/b.jpg") || !isJunk("x/._p.png") || !isJunk("THUMBS.DB") || isJunk("a.b/c.jpg") {
		t.Error("isJunk")
	}
	_ = strings.ToLower
}
