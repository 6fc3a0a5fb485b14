package archive

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// safePageSet is pageSet without the names 7zz refuses to store.
func safePageSet() []fixtures.File {
	var out []fixtures.File
	for _, f := range pageSet() {
		if n, ok := cleanName(f.Name); ok && n == f.Name {
			out = append(out, f)
		}
	}
	return out
}

func TestRarGenerated(t *testing.T) {
	for name, build := range map[string]func([]fixtures.File) []byte{"rar4": fixtures.RAR4, "rar5": fixtures.RAR5} {
		t.Run(name, func(t *testing.T) {
			files := append(pageSet(), fixtures.File{Name: "Test/ComicInfo.xml", Data: []byte("nested")}, fixtures.File{Name: "ComicInfo.xml", Data: []byte("root")})
			a := mustOpen(t, setup(t, "book.cbr", build(files)))
			if a.Format() != protocol.FormatRar {
				t.Fatalf("format %q", a.Format())
			}
			if got := pageNames(a); !slices.Equal(got, wantPages) {
				t.Fatalf("pages %q, want %q", got, wantPages)
			}
			data, err := a.ReadEntry(a.Pages()[0], 1<<20)
			if err != nil || !bytes.Equal(data, pageSet()[0].Data) {
				t.Fatalf("read: %v", err)
			}
			ci, ok, err := a.ComicInfo()
			if err != nil || !ok || string(ci) != "root" {
				t.Fatalf("ComicInfo %q %v %v", ci, ok, err)
			}
		})
	}
}

func TestSevenZipGenerated(t *testing.T) {
	files := append(safePageSet(), fixtures.File{Name: "Test/ComicInfo.xml", Data: []byte("nested")}, fixtures.File{Name: "ComicInfo.xml", Data: []byte("root")})
	want := []string{"extra/Über Größe 3.webp", "Page 1.png", "page 2.JPG", "page 10.jpg"}
	cases := map[string]struct {
		opt  fixtures.SevenZipOptions
		code string
	}{
		"normal":            {fixtures.SevenZipOptions{}, ""},
		"solid":             {fixtures.SevenZipOptions{Solid: true}, ""},
		"encrypted data":    {fixtures.SevenZipOptions{Password: "pw"}, protocol.ErrArchiveEncrypted},
		"encrypted headers": {fixtures.SevenZipOptions{Password: "pw", EncryptHeaders: true}, protocol.ErrArchiveEncrypted},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "book.cb7")
			err := fixtures.SevenZip(path, files, c.opt)
			if errors.Is(err, fixtures.ErrNo7zz) {
				t.Skip("7zz not installed")
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.code != "" {
				_, err := Open(path)
				wantCode(t, err, c.code)
				return
			}
			a := mustOpen(t, path)
			if got := pageNames(a); !slices.Equal(got, want) {
				t.Fatalf("pages %q, want %q", got, want)
			}
			for _, p := range a.Pages() {
				if _, err := a.ReadEntry(p, 1<<20); err != nil {
					t.Fatalf("read %s: %v", p.Name, err)
				}
			}
			ci, ok, err := a.ComicInfo()
			if err != nil || !ok || string(ci) != "root" {
				t.Fatalf("ComicInfo %q %v %v", ci, ok, err)
			}
			data, _ := os.ReadFile(path)
			t.Run("truncated", func(t *testing.T) {
				_, err := Open(setup(t, "t.cb7", data[:len(data)-10]))
				wantCode(t, err, protocol.ErrArchiveCorrupt)
			})
		})
	}
}

func TestKomgaFixtures(t *testing.T) {
	dir := testutil.SharedFixture(t, "komga")
	three := []string{"komga-1.png", "komga-2.png", "komga-3.png"}
	cases := map[string]struct {
		pages []string
		code  string
	}{
		"rar4.rar":           {three, ""},
		"rar4-solid.rar":     {three, ""},
		"rar5-solid.rar":     {three, ""},
		"rar5.rar":           {[]string{"komga.png"}, ""},
		"7zip.7z":            {[]string{"komga.png"}, ""},
		"zip.zip":            {[]string{"komga.png"}, ""},
		"zip-copy.zip":       {[]string{"komga.png"}, ""},
		"zip-bzip2.zip":      {[]string{"komga.png"}, ""},
		"zip-deflate64.zip":  {[]string{"komga.png"}, ""},
		"zip-lzma.zip":       {[]string{"komga.png"}, ""},
		"zip-ppmd.zip":       {[]string{"komga.png"}, ""},
		"rar4-encrypted.rar": {nil, protocol.ErrArchiveEncrypted},
		"rar5-encrypted.rar": {nil, protocol.ErrArchiveEncrypted},
		"7zip-encrypted.7z":  {nil, protocol.ErrArchiveEncrypted},
		"zip-encrypted.zip":  {nil, protocol.ErrArchiveEncrypted},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if c.pages == nil {
				_, err := Open(path)
				wantCode(t, err, c.code)
				return
			}
			a := mustOpen(t, path)
			if got := pageNames(a); !slices.Equal(got, c.pages) {
				t.Fatalf("pages %q, want %q", got, c.pages)
			}
			for _, p := range a.Pages() {
				data, err := a.ReadEntry(p, 1<<20)
				if err != nil || len(data) != 3108 || !bytes.HasPrefix(data, []byte("\x89PNG")) {
					t.Fatalf("read %s: %d bytes, %v", p.Name, len(data), err)
				}
			}
		})
	}
}

// TestZipUnsupportedMethod: a method without a decoder is not corruption.
func TestZipUnsupportedMethod(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "p.jpg", Method: 9, CompressedSize64: 3, UncompressedSize64: 3})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abc"))
	zw.Close()
	a := mustOpen(t, setup(t, "deflate64.cbz", buf.Bytes()))
	if len(a.Pages()) != 1 {
		t.Fatalf("pages %q", pageNames(a))
	}
	_, err = a.ReadEntry(a.Pages()[0], 100)
	wantCode(t, err, protocol.ErrUnsupportedCompression)
}

// TestLibraryManifest opens every file of a generated library and checks
// it against the manifest: page counts, ComicInfo presence, error codes.
func TestLibraryManifest(t *testing.T) {
	dir := t.TempDir()
	m, err := fixtures.Library(dir, fixtures.LibrarySpec{Files: 40, Broken: 8})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[fixtures.Kind]int{}
	for _, f := range m.Files {
		kinds[f.Kind]++
		a, err := Open(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if f.ErrorCode != "" {
			wantCode(t, err, f.ErrorCode)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		_, hasCI, err := a.ComicInfo()
		if err != nil || len(a.Pages()) != f.Pages || hasCI != (f.Info != nil) {
			t.Fatalf("%s: %d pages (want %d), ComicInfo %v (want %v), err %v", f.Path, len(a.Pages()), f.Pages, hasCI, f.Info != nil, err)
		}
		a.Close()
	}
	if len(m.Files) != 40 || kinds[fixtures.KindCBZ] == 0 || kinds[fixtures.KindCBR4] == 0 || kinds[fixtures.KindCBR5] == 0 || kinds[fixtures.KindImage] == 0 {
		t.Fatalf("unexpected mix %v", kinds)
	}
}
