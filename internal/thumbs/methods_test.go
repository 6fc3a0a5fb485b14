package thumbs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// TestRenderEveryMethod: a seven-page book 7zz writes with each method
// 7-Zip offers gets a ready cover, and a method without a decoder fails
// the render with unsupported_compression (not decode_error), naming it.
func TestRenderEveryMethod(t *testing.T) {
	t.Parallel()
	pages, err := fixtures.Pages(7, fixtures.PageOptions{W: 64, H: 96})
	must(t, err)
	e := setup(t)
	for _, c := range []struct {
		name string
		opt  fixtures.SevenZipOptions
		ok   bool
	}{
		{"Store.cbz", fixtures.SevenZipOptions{Zip: true, Method: "Copy"}, true},
		{"Deflate.cbz", fixtures.SevenZipOptions{Zip: true, Method: "Deflate"}, true},
		{"BZip2.cbz", fixtures.SevenZipOptions{Zip: true, Method: "BZip2"}, true},
		{"LZMA.cbz", fixtures.SevenZipOptions{Zip: true, Method: "LZMA"}, true},
		{"XZ.cbz", fixtures.SevenZipOptions{Zip: true, Method: "XZ"}, true},
		{"PPMd.cbz", fixtures.SevenZipOptions{Zip: true, Method: "PPMd"}, true},
		{"Deflate64.cbz", fixtures.SevenZipOptions{Zip: true, Method: "Deflate64"}, true},
		{"LZMA2.cb7", fixtures.SevenZipOptions{Method: "LZMA2"}, true},
		{"PPMd.cb7", fixtures.SevenZipOptions{Method: "PPMd"}, true},
		{"BZip2.cb7", fixtures.SevenZipOptions{Method: "BZip2"}, true},
		{"Deflate.cb7", fixtures.SevenZipOptions{Method: "Deflate"}, true},
		{"BCJ2.cb7", fixtures.SevenZipOptions{Filter: "BCJ2"}, true},
		{"ARM64.cb7", fixtures.SevenZipOptions{Filter: "ARM64"}, true},
		{"Deflate64.cb7", fixtures.SevenZipOptions{Method: "Deflate64"}, true},
		{"RISCV.cb7", fixtures.SevenZipOptions{Filter: "RISCV"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(e.lib, c.name)
			if err := fixtures.SevenZip(path, pages, c.opt); errors.Is(err, fixtures.ErrNo7zz) {
				t.Skip("7zz not installed")
			} else if err != nil {
				t.Fatal(err)
			}
			th := e.claim(t, e.register(t, c.name), protocol.ImageWebP)
			res, err := e.r.RenderRow(context.Background(), th)
			if !c.ok {
				if got := protocol.CodeOf(err, ""); got != protocol.ErrUnsupportedCompression {
					t.Fatalf("render: %v (code %q), want unsupported_compression", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath))); err != nil || res.Width != 64 || res.Height != 96 { // never upscaled
				t.Fatalf("cover %+v: %v", res, err)
			}
		})
	}
}
