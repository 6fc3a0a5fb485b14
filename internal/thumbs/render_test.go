package thumbs

import (
	"image"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

func TestRenderCover(t *testing.T) {
	t.Parallel()
	setupVips(1)
	for _, format := range []protocol.ImageFormat{protocol.ImageWebP, protocol.ImageJPEG} {
		t.Run("page "+string(format), func(t *testing.T) {
			src := mustJPEG(t, 1200, 1800, 3)
			c, err := RenderCover(src, Options{Width: 320, Format: format, TargetBytes: 48 << 10})
			if err != nil {
				t.Fatal(err)
			}
			if kind(c.Data) != string(format) {
				t.Fatalf("encoded as %s, want %s", kind(c.Data), format)
			}
			d := mustDecode(t, c.Data)
			if d.W != 320 || d.H != 480 || c.Width != 320 || c.Height != 480 {
				t.Fatalf("cover %dx%d (reported %dx%d), want 320x480", d.W, d.H, c.Width, c.Height)
			}
			if len(c.Data) > 48<<10 || c.OverBudget {
				t.Fatalf("cover is %d bytes, over the 48 KiB budget", len(c.Data))
			}
			if c.Attempts < 1 || c.Attempts > 2 || c.Quality != 85-10*(c.Attempts-1) {
				t.Fatalf("attempts %d quality %d: a typical cover fits in 1-2 encodes", c.Attempts, c.Quality)
			}
		})
	}
	t.Run("loose formats", func(t *testing.T) {
		for _, f := range []fixtures.ImageFormat{fixtures.PNG, fixtures.GIF, fixtures.WebP} {
			c, err := RenderCover(mustImage(t, f, 400, 600, 5), Options{})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if d := mustDecode(t, c.Data); d.W != 320 || d.H != 480 || d.Bands != 3 {
				t.Fatalf("%s: cover %dx%d %d bands", f, d.W, d.H, d.Bands)
			}
		}
	})
	t.Run("budget steps quality down", func(t *testing.T) {
		// A 600 px wide cover cannot fit 3 KiB at quality 90.
		src := mustJPEG(t, 800, 1200, 9)
		c, err := RenderCover(src, Options{Width: 600, TargetBytes: 3 << 10, QualityStart: 90, QualityStep: 20, QualityMin: 10})
		if err != nil {
			t.Fatal(err)
		}
		if c.Attempts < 2 || c.Quality != 90-20*(c.Attempts-1) && c.Quality != 10 {
			t.Fatalf("attempts %d quality %d: want steps of 20 from 90", c.Attempts, c.Quality)
		}
		if !c.OverBudget && len(c.Data) > 3<<10 {
			t.Fatalf("%d bytes over budget but not flagged", len(c.Data))
		}
		tiny, err := RenderCover(src, Options{Width: 600, TargetBytes: 10, QualityStart: 50, QualityStep: 20, QualityMin: 30})
		if err != nil {
			t.Fatal(err)
		}
		if !tiny.OverBudget || tiny.Quality != 30 || tiny.Attempts != 2 {
			t.Fatalf("impossible budget: over=%v q=%d attempts=%d; want the quality_min encode kept", tiny.OverBudget, tiny.Quality, tiny.Attempts)
		}
	})
	t.Run("small image is not enlarged", func(t *testing.T) {
		c, err := RenderCover(mustJPEG(t, 100, 150, 1), Options{Width: 320})
		if err != nil {
			t.Fatal(err)
		}
		if c.Width != 100 || c.Height != 150 {
			t.Fatalf("cover %dx%d, want 100x150", c.Width, c.Height)
		}
	})
	t.Run("cmyk jpeg becomes srgb", func(t *testing.T) {
		rgb := encodeJPEG(t, twoColor(800, 1200))
		for name, args := range map[string][]string{
			"no profile":       {"colourspace", "cmyk"},
			"embedded profile": {"icc_export", "--output-profile", "cmyk"},
		} {
			cmyk := vipsConvert(t, rgb, "cmyk.jpg", args...)
			if d := mustDecode(t, cmyk); d.Bands != 4 || d.Interpretation != "cmyk" {
				t.Fatalf("%s: fixture is %d bands %s, not CMYK", name, d.Bands, d.Interpretation)
			}
			c, err := RenderCover(cmyk, Options{Format: protocol.ImageJPEG})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			d := mustDecode(t, c.Data)
			if d.Bands != 3 || d.Interpretation != "srgb" || d.W != 320 {
				t.Fatalf("%s: cover %dx%d %d bands %s, want 320 wide sRGB", name, d.W, d.H, d.Bands, d.Interpretation)
			}
			if l, r := d.At(d.W/4, d.H/2), d.At(3*d.W/4, d.H/2); !isReddish(l) || !isBluish(r) {
				t.Fatalf("%s: colours wrong after CMYK conversion: left %v right %v", name, l, r)
			}
		}
	})
	t.Run("exif orientation applied", func(t *testing.T) {
		// Stored 800×400 with orientation 6 (rotate 90° clockwise): shown
		// 400×800, left (red) half on top.
		src := withOrientation(encodeJPEG(t, twoColor(800, 400)), 6)
		c, err := RenderCover(src, Options{Width: 320, Format: protocol.ImageJPEG})
		if err != nil {
			t.Fatal(err)
		}
		d := mustDecode(t, c.Data)
		if d.W != 320 || d.H != 640 {
			t.Fatalf("cover %dx%d, want 320x640 (rotated)", d.W, d.H)
		}
		if top, bottom := d.At(d.W/2, d.H/4), d.At(d.W/2, 3*d.H/4); !isReddish(top) || !isBluish(bottom) {
			t.Fatalf("rotation wrong: top %v bottom %v", top, bottom)
		}
		if hasEXIF(c.Data) {
			t.Fatal("metadata not stripped: cover has an EXIF segment")
		}
	})
	t.Run("1x20000 strip", func(t *testing.T) {
		strip := encodePNG(t, fixtures.Picture(1, 20000, 4))
		c, err := RenderCover(strip, Options{Width: 320})
		if err != nil {
			t.Fatal(err)
		}
		d := mustDecode(t, c.Data)
		if d.W < 1 || d.W > 320 || d.H > 8*320 || d.H < 1 {
			t.Fatalf("strip cover %dx%d, want within 320x2560", d.W, d.H)
		}
		wide := encodePNG(t, fixtures.Picture(20000, 1, 4))
		c, err = RenderCover(wide, Options{Width: 320})
		if err != nil {
			t.Fatal(err)
		}
		if d := mustDecode(t, c.Data); d.W != 320 || d.H != 1 {
			t.Fatalf("wide strip cover %dx%d, want 320x1", d.W, d.H)
		}
	})
	t.Run("truncated jpeg is decode_error", func(t *testing.T) {
		src := mustJPEG(t, 1200, 1800, 2)
		_, err := RenderCover(src[:len(src)/2], Options{})
		if code := protocol.CodeOf(err, ""); code != protocol.ErrDecodeError {
			t.Fatalf("truncated: %v (code %q), want decode_error", err, code)
		}
	})
	t.Run("garbage is decode_error", func(t *testing.T) {
		for _, b := range [][]byte{nil, []byte("not an image at all"), make([]byte, 4096)} {
			if _, err := RenderCover(b, Options{}); protocol.CodeOf(err, "") != protocol.ErrDecodeError {
				t.Fatalf("%q...: %v, want decode_error", b[:min(len(b), 8)], err)
			}
		}
	})
	t.Run("pixel bomb is source_too_large", func(t *testing.T) {
		src := encodePNG(t, image.NewGray(image.Rect(0, 0, 500, 500)))
		_, err := RenderCover(src, Options{MaxPixels: 200_000})
		if protocol.CodeOf(err, "") != protocol.ErrSourceTooLarge {
			t.Fatalf("250 kpx over a 200 kpx cap: %v, want source_too_large", err)
		}
	})
}

// hasEXIF reports whether a JPEG carries an APP1 Exif segment.
func hasEXIF(b []byte) bool {
	for i := 2; i+4 < len(b) && b[i] == 0xff; {
		marker := b[i+1]
		if marker == 0xda { // start of scan: no more headers
			return false
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		if marker == 0xe1 && i+10 < len(b) && string(b[i+4:i+8]) == "Exif" {
			return true
		}
		i += 2 + n
	}
	return false
}
