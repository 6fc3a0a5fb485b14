package archive

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// methodCase is one archive 7-Zip writes with one method: either every
// page reads back byte for byte, or a page read is unsupported_compression
// naming the method, while the listing still has every page.
type methodCase struct {
	name        string
	opt         fixtures.SevenZipOptions
	unsupported string // the method name the error must give; "" = readable
}

var methodCases = []methodCase{
	{"zip Store", fixtures.SevenZipOptions{Zip: true, Method: "Copy"}, ""},
	{"zip Deflate", fixtures.SevenZipOptions{Zip: true, Method: "Deflate"}, ""},
	{"zip Deflate64", fixtures.SevenZipOptions{Zip: true, Method: "Deflate64"}, ""},
	{"zip BZip2", fixtures.SevenZipOptions{Zip: true, Method: "BZip2"}, ""},
	{"zip LZMA", fixtures.SevenZipOptions{Zip: true, Method: "LZMA"}, ""},
	{"zip PPMd", fixtures.SevenZipOptions{Zip: true, Method: "PPMd"}, ""},
	{"zip XZ", fixtures.SevenZipOptions{Zip: true, Method: "XZ"}, ""},
	{"7z Copy", fixtures.SevenZipOptions{Method: "Copy"}, ""},
	{"7z LZMA", fixtures.SevenZipOptions{Method: "LZMA"}, ""},
	{"7z LZMA2", fixtures.SevenZipOptions{Method: "LZMA2"}, ""},
	{"7z PPMd", fixtures.SevenZipOptions{Method: "PPMd"}, ""},
	{"7z BZip2", fixtures.SevenZipOptions{Method: "BZip2"}, ""},
	{"7z Deflate", fixtures.SevenZipOptions{Method: "Deflate"}, ""},
	{"7z Deflate64", fixtures.SevenZipOptions{Method: "Deflate64"}, ""},
	{"7z BCJ", fixtures.SevenZipOptions{Filter: "BCJ"}, ""},
	{"7z BCJ2", fixtures.SevenZipOptions{Filter: "BCJ2"}, ""},
	{"7z ARM64", fixtures.SevenZipOptions{Filter: "ARM64"}, ""},
	{"7z solid LZMA2", fixtures.SevenZipOptions{Solid: true}, ""},
	{"7z Delta:1", fixtures.SevenZipOptions{Filter: "Delta:1"}, ""},
	{"7z Delta:4", fixtures.SevenZipOptions{Filter: "Delta:4"}, ""},
	{"7z Delta:256", fixtures.SevenZipOptions{Filter: "Delta:256"}, ""}, // sevenzip's own filter loops forever
}

// MethodPages are the seven pages every generated method fixture holds.
func methodPages(t testing.TB) []fixtures.File {
	t.Helper()
	pages, err := fixtures.Pages(7, fixtures.PageOptions{W: 48, H: 64})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// TestMethods: every method 7-Zip offers when it writes zip or 7z, from
// archives 7zz writes now (nothing is committed).
func TestMethods(t *testing.T) {
	pages := methodPages(t)
	for _, c := range methodCases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "book.cb7")
			if c.opt.Zip {
				path = filepath.Join(filepath.Dir(path), "book.cbz")
			}
			if err := fixtures.SevenZip(path, pages, c.opt); errors.Is(err, fixtures.ErrNo7zz) {
				t.Skip("7zz not installed")
			} else if err != nil {
				t.Fatal(err)
			}
			checkMethod(t, mustOpen(t, path), pages, c.unsupported)
		})
	}
	t.Run("zip Zstandard", func(t *testing.T) { // 7zz 22 does not write it: Go does
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		zw.RegisterCompressor(zipMethodZstd, func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) })
		for _, p := range pages {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: p.Name, Method: zipMethodZstd})
			must(t, err)
			_, err = w.Write(p.Data)
			must(t, err)
		}
		must(t, zw.Close())
		checkMethod(t, mustOpen(t, setup(t, "book.cbz", buf.Bytes())), pages, "")
	})
}

func checkMethod(t *testing.T, a Archive, pages []fixtures.File, unsupported string) {
	t.Helper()
	if len(a.Pages()) != len(pages) {
		t.Fatalf("%d pages listed, want %d", len(a.Pages()), len(pages))
	}
	for i, p := range a.Pages() {
		data, err := a.ReadEntry(p, 1<<20)
		if unsupported != "" {
			wantCode(t, err, protocol.ErrUnsupportedCompression)
			if !strings.Contains(err.Error(), unsupported) {
				t.Fatalf("error %q does not name %q", err, unsupported)
			}
			return
		}
		if err != nil {
			t.Fatalf("page %s: %v", p.Name, err)
		}
		if !bytes.Equal(data, pages[i].Data) {
			t.Fatalf("page %s: %d bytes differ from the %d written", p.Name, len(data), len(pages[i].Data))
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDictionaryLimits: a stream that declares a dictionary past
// MaxDictionary is refused as source_too_large before anything is
// allocated, whatever else it holds.
func TestDictionaryLimits(t *testing.T) {
	raw := func(method uint16, body []byte) Archive {
		t.Helper()
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.CreateRaw(&zip.FileHeader{Name: "p.jpg", Method: method, CompressedSize64: uint64(len(body)), UncompressedSize64: 1000})
		must(t, err)
		_, err = w.Write(body)
		must(t, err)
		must(t, zw.Close())
		return mustOpen(t, setup(t, "big.cbz", buf.Bytes()))
	}
	t.Run("LZMA", func(t *testing.T) {
		// version 9.20, 5 property bytes, lc/lp/pb, a 1 GiB dictionary
		a := raw(zipMethodLZMA, []byte{9, 20, 5, 0, 0x5d, 0, 0, 0, 0x40, 1, 2, 3})
		_, err := a.ReadEntry(a.Pages()[0], 1<<20)
		wantCode(t, err, protocol.ErrSourceTooLarge)
	})
	t.Run("XZ", func(t *testing.T) {
		var x bytes.Buffer
		xw, err := xz.NewWriter(&x)
		must(t, err)
		_, err = xw.Write([]byte("page"))
		must(t, err)
		must(t, xw.Close())
		stream := x.Bytes()
		// The block header's LZMA2 filter: id 0x21, 1 property byte.
		i := bytes.Index(stream[12:], []byte{0x21, 0x01}) + 12
		if i < 12 {
			t.Fatal("no LZMA2 filter in the block header")
		}
		stream[i+2] = 40 // 4 GiB - 1
		a := raw(zipMethodXZ, stream)
		_, err = a.ReadEntry(a.Pages()[0], 1<<20)
		wantCode(t, err, protocol.ErrSourceTooLarge)
	})
	t.Run("PPMd", func(t *testing.T) {
		// order 6, 256 MiB, restart: the largest model the header can ask
		a := raw(zipMethodPPMd, []byte{0xf5, 0x0f, 0, 0, 0, 0})
		_, err := a.ReadEntry(a.Pages()[0], 1<<20)
		wantCode(t, err, protocol.ErrSourceTooLarge)
	})
}

// TestSevenZipOptionalRecords: what 7-Zip reads cleanly is not corrupt. An
// archive of no entries (a bare start header) has no pages; a plain header
// with archive properties (an optional record the decoder does not know)
// reads every page.
func TestSevenZipOptionalRecords(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		sig := append([]byte("7z\xbc\xaf\x27\x1c\x00\x04"), make([]byte, 24)...)
		binary.LittleEndian.PutUint32(sig[8:12], crc32.ChecksumIEEE(sig[12:32]))
		a := mustOpen(t, setup(t, "empty.cb7", sig))
		if len(a.Pages()) != 0 {
			t.Fatalf("pages %q", pageNames(a))
		}
	})
	t.Run("archive properties", func(t *testing.T) {
		pages := methodPages(t)
		path := filepath.Join(t.TempDir(), "props.cb7")
		if err := fixtures.SevenZip(path, pages, fixtures.SevenZipOptions{Method: "Copy", PlainHeader: true}); errors.Is(err, fixtures.ErrNo7zz) {
			t.Skip("7zz not installed")
		} else if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		must(t, err)
		off, n := binary.LittleEndian.Uint64(data[12:20]), binary.LittleEndian.Uint64(data[20:28])
		hdr := data[32+off : 32+off+n]
		if hdr[0] != 0x01 {
			t.Fatalf("header starts with %#x: not plain", hdr[0])
		}
		// kHeader, kArchiveProperties {type 1, 1 byte: 0xaa}, kEnd, the rest.
		patched := append([]byte{0x01, 0x02, 0x01, 0x01, 0xaa, 0x00}, hdr[1:]...)
		out := append(append([]byte{}, data[:32+off]...), patched...)
		binary.LittleEndian.PutUint64(out[20:28], uint64(len(patched)))
		binary.LittleEndian.PutUint32(out[28:32], crc32.ChecksumIEEE(patched))
		binary.LittleEndian.PutUint32(out[8:12], crc32.ChecksumIEEE(out[12:32]))
		checkMethod(t, mustOpen(t, setup(t, "props.cb7", out)), pages, "")
	})
}

// TestZipEncryptedDirectory: a zip whose central directory PKWARE strong
// encryption hid is locked, not broken; junk whose flags happen to have
// bit 13 set stays corrupt.
func TestZipEncryptedDirectory(t *testing.T) {
	local := func(flags uint16) []byte {
		h := append([]byte("PK\x03\x04\x33\x00"), 0, 0)
		binary.LittleEndian.PutUint16(h[6:8], flags)
		return append(h, bytes.Repeat([]byte{0x5a}, 200)...)
	}
	_, err := Open(setup(t, "locked.cbz", local(0x2041)))
	wantCode(t, err, protocol.ErrArchiveEncrypted)
	_, err = Open(setup(t, "junk.cbz", local(0x3030)))
	wantCode(t, err, protocol.ErrArchiveCorrupt)
}

// TestEmbeddedArchives: an archive behind a stub (a self-extracting .exe)
// or behind stray bytes is read as the archive it is.
func TestEmbeddedArchives(t *testing.T) {
	pages := methodPages(t)
	stub := append([]byte("MZ\x90\x00"), bytes.Repeat([]byte{0x4d}, 70_000)...)
	zipped, err := fixtures.Zip(pages, zip.Deflate)
	must(t, err)
	for name, data := range map[string][]byte{"zip": zipped, "rar5": fixtures.RAR5(pages), "rar4": fixtures.RAR4(pages)} {
		t.Run(name, func(t *testing.T) {
			checkMethod(t, mustOpen(t, setup(t, "sfx.exe", append(append([]byte{}, stub...), data...))), pages, "")
		})
	}
	t.Run("7z", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "book.7z")
		if err := fixtures.SevenZip(path, pages, fixtures.SevenZipOptions{}); errors.Is(err, fixtures.ErrNo7zz) {
			t.Skip("7zz not installed")
		} else if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		must(t, err)
		checkMethod(t, mustOpen(t, setup(t, "sfx.exe", append(append([]byte{}, stub...), data...))), pages, "")
	})
	t.Run("nothing inside", func(t *testing.T) {
		_, err := Open(setup(t, "plain.exe", stub))
		wantCode(t, err, protocol.ErrArchiveCorrupt)
	})
}

// TestLegacyZipMethodsNamed writes a page under each method PKZIP 1.x and
// others defined that no decoder reads (the bytes are never decoded): the
// listing keeps the page, and reading it is unsupported_compression naming
// the method as zipinfo does.
func TestLegacyZipMethodsNamed(t *testing.T) {
	for method, name := range map[uint16]string{
		1: "Shrink", 2: "Reduce, factor 1", 3: "Reduce, factor 2", 4: "Reduce, factor 3",
		5: "Reduce, factor 4", 6: "Implode", 7: "Tokenize", 10: "PKWARE DCL Implode", 16: "IBM z/OS CMPSC",
	} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.CreateRaw(&zip.FileHeader{Name: "001.jpg", Method: method, CompressedSize64: 4, UncompressedSize64: 16})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("\x00\x01\x02\x03")); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		a, err := OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "legacy.cbz")
		if err != nil {
			t.Fatalf("method %d: open: %v", method, err)
		}
		if len(a.Pages()) != 1 {
			t.Fatalf("method %d: %d pages, want 1", method, len(a.Pages()))
		}
		_, err = a.ReadEntry(a.Pages()[0], 1<<20)
		want := fmt.Sprintf("zip method %d (%s) is not supported", method, name)
		if protocol.CodeOf(err, "") != protocol.ErrUnsupportedCompression || !strings.Contains(err.Error(), want) {
			t.Fatalf("method %d: read: %v, want unsupported_compression %q", method, err, want)
		}
	}
}
