package bench

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// TestPNGWithText: the scale books' pages are valid PNGs of the same
// picture with other bytes.
func TestPNGWithText(t *testing.T) {
	t.Parallel()
	base, err := fixtures.Image(fixtures.PNG, 4, 6, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, b := pngWithText(base, "book 1"), pngWithText(base, "book 2")
	if bytes.Equal(a, b) {
		t.Fatal("two books' pages are equal")
	}
	for _, p := range [][]byte{a, b} {
		img, err := png.Decode(bytes.NewReader(p))
		if err != nil || img.Bounds().Dx() != 4 {
			t.Fatalf("not a 4-wide PNG: %v", err)
		}
	}
}
