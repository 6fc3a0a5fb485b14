package archive

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestZipUnsupportedMethod: a method without a decoder (Implode) is not
// corruption.
func TestZipUnsupportedMethod(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "p.jpg", Method: 6, CompressedSize64: 3, UncompressedSize64: 3})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abc"))
	zw.Close()
	a := mustOpen(t, setup(t, "implode.cbz", buf.Bytes()))
	if len(a.Pages()) != 1 {
		t.Fatalf("pages %q", pageNames(a))
	}
	_, err = a.ReadEntry(a.Pages()[0], 100)
	wantCode(t, err, protocol.ErrUnsupportedCompression)
}

// TestRar15Unsupported: a RAR4-format entry packed by RAR 1.5 (unpack
// version 15, method Normal) is listed, and reading it is
// unsupported_compression naming RAR 1.5, not archive_corrupt. The
// generated stored archive has its first file header patched to say so.
func TestRar15Unsupported(t *testing.T) {
	b := fixtures.RAR4([]fixtures.File{{Name: "001.jpg", Data: bytes.Repeat([]byte{7}, 64)}})
	const hdr = 7 + 13 // marker, main header
	if b[hdr+2] != 0x74 {
		t.Fatalf("no file header at %d", hdr)
	}
	size := int(binary.LittleEndian.Uint16(b[hdr+5:]))
	b[hdr+24], b[hdr+25] = 15, 0x33 // unpack version 1.5, method Normal
	binary.LittleEndian.PutUint16(b[hdr:], uint16(crc32.ChecksumIEEE(b[hdr+2:hdr+size])))
	a := mustOpen(t, setup(t, "rar15.cbr", b))
	if len(a.Pages()) != 1 {
		t.Fatalf("pages %q", pageNames(a))
	}
	_, err := a.ReadEntry(a.Pages()[0], 1<<20)
	wantCode(t, err, protocol.ErrUnsupportedCompression)
	if !strings.Contains(err.Error(), "RAR 1.5") {
		t.Fatalf("%v does not name RAR 1.5", err)
	}
}

// TestRar4Truncated: a RAR4 file cut inside its last entry's data, or
// between two blocks' worth of a header, is archive_corrupt; rardecode
// alone would list every entry and read the pages before the cut.
func TestRar4Truncated(t *testing.T) {
	files := []fixtures.File{{Name: "001.jpg", Data: bytes.Repeat([]byte{1}, 500)}, {Name: "notes.txt", Data: bytes.Repeat([]byte{2}, 500)}}
	b := fixtures.RAR4(files)
	if a := mustOpen(t, setup(t, "whole.cbr", b)); len(a.Pages()) != 1 {
		t.Fatalf("whole: %q", pageNames(a))
	}
	for _, cut := range []int{len(b) - 7 - 100, len(b) - 7 - 500, len(b) - 3} { // in the data, at its start, in the end block
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			err := readAll(setup(t, "cut.cbr", b[:cut]))
			if protocol.CodeOf(err, "") != protocol.ErrArchiveCorrupt {
				t.Fatalf("cut at %d of %d: %v, want archive_corrupt", cut, len(b), err)
			}
		})
	}
}

// TestSevenZipEmptyCoderID: a coder written with a zero-length method id
// (as py7zr does) is Copy, as 7-Zip reads it: 7zz's stored book with its
// plain header's Copy coder (flag 01, id 00) rewritten so (flag 00) reads
// back every page.
func TestSevenZipEmptyCoderID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "book.cb7")
	pages := methodPages(t)
	opt := fixtures.SevenZipOptions{Method: "Copy", PlainHeader: true}
	if err := fixtures.SevenZip(path, pages, opt); errors.Is(err, fixtures.ErrNo7zz) {
		t.Skip("7zz not installed")
	} else if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	must(t, err)
	off, n := binary.LittleEndian.Uint64(data[12:]), binary.LittleEndian.Uint64(data[20:])
	hdr := data[32+off : 32+off+n]
	// UnpackInfo, FolderID, the folder count, not external; then per
	// folder one coder: flag 01, id 00 (Copy) becomes flag 00.
	const unpackInfo, folderID = 0x07, 0x0b // 7-Zip's property ids (7zItem.h)
	i := bytes.Index(hdr, []byte{unpackInfo, folderID})
	if i < 0 || hdr[i+2] >= 0x80 || hdr[i+3] != 0 {
		t.Fatalf("no folders in the header % x", hdr)
	}
	folders := int(hdr[i+2])
	rewritten := append([]byte{}, hdr[:i+4]...)
	j := i + 4
	for range folders {
		if !bytes.Equal(hdr[j:j+3], []byte{1, 0x01, 0x00}) {
			t.Fatalf("folder at %d is no lone Copy coder: % x", j, hdr[j:j+3])
		}
		rewritten = append(rewritten, 1, 0x00)
		j += 3
	}
	hdr = append(rewritten, hdr[j:]...)
	out := append(bytes.Clone(data[:32+off]), hdr...)
	binary.LittleEndian.PutUint64(out[20:], uint64(len(hdr)))
	binary.LittleEndian.PutUint32(out[28:], crc32.ChecksumIEEE(hdr))
	binary.LittleEndian.PutUint32(out[8:], crc32.ChecksumIEEE(out[12:32]))
	checkMethod(t, mustOpen(t, setup(t, "empty-id.cb7", out)), pages, "")
}

// TestSevenZipPageCRC: a stored 7z page with one byte changed fails its
// CRC and is archive_corrupt, not a page that renders garbage.
func TestSevenZipPageCRC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "book.cb7")
	pages := []fixtures.File{{Name: "001.jpg", Data: bytes.Repeat([]byte{5}, 4096)}}
	if err := fixtures.SevenZip(path, pages, fixtures.SevenZipOptions{Method: "Copy"}); errors.Is(err, fixtures.ErrNo7zz) {
		t.Skip("7zz not installed")
	} else if err != nil {
		t.Fatal(err)
	}
	if err := readAll(path); err != nil {
		t.Fatalf("sound archive: %v", err)
	}
	data, err := os.ReadFile(path)
	must(t, err)
	data[32+100] ^= 0xff // inside the stored page, past the start header
	must(t, os.WriteFile(path, data, 0o644))
	err = readAll(path)
	wantCode(t, err, protocol.ErrArchiveCorrupt)
	if !strings.Contains(err.Error(), "CRC failed") {
		t.Fatalf("%v does not say the CRC failed", err)
	}
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
