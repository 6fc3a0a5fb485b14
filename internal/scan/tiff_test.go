package scan

import (
	"slices"
	"strings"
	"testing"
)

// TestTIFFScannedByDefault: scanning groups publish TIFF pages, and loose
// .tif or .tiff files are images the default scan.extensions index, like
// .jpg files: here two of them make a folder book.
func TestTIFFScannedByDefault(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tiff := []byte("II*\x00\x08\x00\x00\x00\x00\x00") // little-endian TIFF, an empty IFD
	e.file("Scans/poster.tif", tiff, t0)
	e.file("Scans/back.TIFF", tiff, t0)
	e.file("Scans/notes.txt", []byte("not indexed"), t0)
	e.scan()
	got := e.rows(`SELECT relative_path, format FROM library_files ORDER BY relative_path`)
	want := []string{"Scans/|folder", "Scans/back.TIFF|image", "Scans/poster.tif|image"}
	if !slices.Equal(got, want) {
		t.Fatalf("files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
