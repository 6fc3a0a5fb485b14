package thumbs

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// TestRenderTIFFPage: a .tif page (the vips CLI writes it, Go cannot) is a
// page of its book, sorts first and gives the cover; a loose .tiff is a
// one-page book too.
func TestRenderTIFFPage(t *testing.T) {
	t.Parallel()
	setupVips(1)
	e := setup(t)
	tif := vipsConvert(t, mustJPEG(t, 200, 300, 4), "page.tif", "copy")
	if kind := string(tif[:4]); kind != "II*\x00" && kind != "MM\x00*" {
		t.Fatalf("fixture is no TIFF (% x)", tif[:4])
	}
	book := e.put(t, "Scans/Book 001.cbz", mustZip(t,
		fixtures.File{Name: "001.tif", Data: tif}, fixtures.File{Name: "002.jpg", Data: mustJPEG(t, 100, 150, 5)}))
	res, err := e.render(t, book)
	if err != nil {
		t.Fatal(err)
	}
	if res.Width != 200 || res.Height != 300 { // never upscaled: the TIFF page, not the JPEG
		t.Fatalf("cover %dx%d, want 200x300 from the TIFF page", res.Width, res.Height)
	}
	loose := e.put(t, "Scans/poster.tiff", tif)
	if res, err := e.render(t, loose); err != nil || res.Width != 200 {
		t.Fatalf("loose TIFF: %+v, %v", res, err)
	}
}
