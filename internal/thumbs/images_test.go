package thumbs

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// Test images are generated here: Go's encoders for JPEG/PNG/GIF, the vips
// CLI for what Go cannot write (CMYK JPEG, WebP).

func mustJPEG(t testing.TB, w, h, seed int) []byte {
	t.Helper()
	b, err := fixtures.Image(fixtures.JPEG, w, h, seed)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustImage(t testing.TB, f fixtures.ImageFormat, w, h, seed int) []byte {
	t.Helper()
	b, err := fixtures.Image(f, w, h, seed)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// twoColor is an image whose left half is red and right half blue.
func twoColor(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{220, 20, 20, 255}
			if x >= w/2 {
				c = color.RGBA{20, 20, 220, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

func encodeJPEG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// vipsConvert runs the vips CLI on src (written to a temp file) and
// returns the output file's bytes.
func vipsConvert(t testing.TB, src []byte, outName string, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("vips")
	if err != nil {
		t.Skip("vips CLI not installed")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jpg"), filepath.Join(dir, outName)
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := append([]string{args[0], in, out}, args[1:]...)
	if msg, err := exec.Command(bin, cmd...).CombinedOutput(); err != nil {
		t.Fatalf("vips %v: %v: %s", cmd, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withOrientation inserts an EXIF APP1 segment with the given orientation
// tag right after the JPEG's SOI marker.
func withOrientation(jpg []byte, orientation uint16) []byte {
	var tiff bytes.Buffer
	tiff.WriteString("MM\x00\x2a")
	binary.Write(&tiff, binary.BigEndian, uint32(8)) // IFD0 offset
	binary.Write(&tiff, binary.BigEndian, uint16(1)) // one entry
	binary.Write(&tiff, binary.BigEndian, uint16(0x0112))
	binary.Write(&tiff, binary.BigEndian, uint16(3)) // SHORT
	binary.Write(&tiff, binary.BigEndian, uint32(1))
	binary.Write(&tiff, binary.BigEndian, orientation)
	binary.Write(&tiff, binary.BigEndian, uint16(0))
	binary.Write(&tiff, binary.BigEndian, uint32(0)) // no next IFD
	payload := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	var seg bytes.Buffer
	seg.Write([]byte{0xff, 0xe1})
	binary.Write(&seg, binary.BigEndian, uint16(len(payload)+2))
	seg.Write(payload)
	out := append([]byte{}, jpg[:2]...)
	out = append(out, seg.Bytes()...)
	return append(out, jpg[2:]...)
}

// mustDecode decodes a rendered cover completely.
func mustDecode(t testing.TB, b []byte) decoded {
	t.Helper()
	d, err := decodeAll(b)
	if err != nil {
		t.Fatalf("rendered cover does not decode: %v", err)
	}
	return d
}

// Colour checks are loose: a CMYK round trip through the fallback profile
// desaturates, but red stays red and blue stays blue.
func isReddish(px []byte) bool { return int(px[0]) > int(px[1])+80 && int(px[0]) > int(px[2])+80 }
func isBluish(px []byte) bool  { return int(px[2]) > int(px[0])+60 && int(px[2]) > int(px[1])+60 }
func kind(b []byte) string     { return imageKindOf(b) }
func imageKindOf(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return "jpeg"
	case len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	}
	return "?"
}
