package thumbs

import (
	"bytes"
	"errors"
	"image"
	"image/draw"
	"image/jpeg"
	"math/bits"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// coverArt is fixtures.CoverArt: unrelated pictures for unrelated seeds.
func coverArt(w, h int, seed uint64) *image.RGBA { return fixtures.CoverArt(w, h, seed) }

// brighten adds delta to every channel, clamped at 255.
func brighten(src *image.RGBA, delta int) *image.RGBA {
	out := image.NewRGBA(src.Bounds())
	for i, v := range src.Pix {
		if i%4 == 3 {
			out.Pix[i] = v
			continue
		}
		out.Pix[i] = uint8(min(255, int(v)+delta))
	}
	return out
}

// renderedHash renders page as workerd does (RenderCover, default
// options: a 320-pixel WebP within 48 KiB) and hashes the cover.
func renderedHash(t *testing.T, page []byte) uint64 {
	t.Helper()
	c, err := RenderCover(page, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := CoverHash(c.Data)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCoverHashDistances: the same picture re-encoded at JPEG quality 95
// and 50, shrunk to half size by libvips, or brightened gives covers whose
// hashes are within a few bits; unrelated pictures are far apart. The
// figures logged are what samebook.cover_distance's default is chosen
// from (docs/SCANNING.md).
func TestCoverHashDistances(t *testing.T) {
	t.Parallel()
	const near, far = 6, 16
	worstNear, closestFar := 0, 64
	for seed := range uint64(6) {
		art := coverArt(600, 900, seed)
		base := renderedHash(t, encodeJPEGQ(t, art, 95))
		variants := map[string][]byte{
			"jpeg q50":     encodeJPEGQ(t, art, 50),
			"png":          encodePNG(t, art),
			"half size":    vipsConvert(t, encodeJPEGQ(t, art, 95), "half.jpg", "resize", "0.5"),
			"brighter +20": encodeJPEGQ(t, brighten(art, 20), 90),
		}
		for name, page := range variants {
			d := bits.OnesCount64(base ^ renderedHash(t, page))
			worstNear = max(worstNear, d)
			if d > near {
				t.Errorf("seed %d, %s: distance %d, want ≤ %d", seed, name, d, near)
			}
		}
		for other := seed + 1; other < 6; other++ {
			d := bits.OnesCount64(base ^ renderedHash(t, encodeJPEGQ(t, coverArt(600, 900, other), 95)))
			closestFar = min(closestFar, d)
			if d < far {
				t.Errorf("seeds %d and %d: distance %d, want ≥ %d", seed, other, d, far)
			}
		}
	}
	t.Logf("largest distance of a re-encoded, resized or brightened cover: %d; smallest of two pictures: %d", worstNear, closestFar)
}

// TestCoverHashSameBytes: hashing is deterministic, and a cover and its
// cached copy (the same bytes) give one hash.
func TestCoverHashSameBytes(t *testing.T) {
	t.Parallel()
	page := encodeJPEGQ(t, coverArt(400, 600, 42), 90)
	if a, b := renderedHash(t, page), renderedHash(t, page); a != b {
		t.Fatalf("hash of one page differs: %016x vs %016x", a, b)
	}
}

// TestCoverHashBadInput: what is not an image is a decode_error, never a
// hash.
func TestCoverHashBadInput(t *testing.T) {
	t.Parallel()
	jpg := encodeJPEGQ(t, coverArt(100, 150, 1), 90)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"text":      []byte("not an image at all"),
		"truncated": jpg[:20],
	} {
		t.Run(name, func(t *testing.T) {
			h, err := CoverHash(b)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.ErrDecodeError {
				t.Fatalf("CoverHash = %016x, %v; want decode_error", h, err)
			}
		})
	}
}

// TestCoverHashTinyAndAlpha: a cover smaller than 9×8 is enlarged to it,
// and a transparent PNG is hashed over white, like its JPEG cover.
func TestCoverHashTinyAndAlpha(t *testing.T) {
	t.Parallel()
	if _, err := CoverHash(encodePNG(t, coverArt(4, 3, 7))); err != nil {
		t.Fatalf("4×3 image: %v", err)
	}
	art := coverArt(300, 450, 9)
	clear := image.NewNRGBA(art.Bounds())
	draw.Draw(clear, clear.Bounds(), art, image.Point{}, draw.Src)
	white := image.NewRGBA(art.Bounds())
	draw.Draw(white, white.Bounds(), art, image.Point{}, draw.Src)
	draw.Draw(white, image.Rect(0, 0, 100, 450), image.White, image.Point{}, draw.Src)
	for y := range 450 {
		for x := range 100 {
			clear.Pix[y*clear.Stride+x*4+3] = 0
		}
	}
	a, err := CoverHash(encodePNG(t, clear))
	if err != nil {
		t.Fatal(err)
	}
	b, err := CoverHash(encodePNG(t, white))
	if err != nil {
		t.Fatal(err)
	}
	if d := bits.OnesCount64(a ^ b); d > 2 {
		t.Fatalf("transparent edge vs white edge: distance %d (%016x vs %016x), want ≤ 2", d, a, b)
	}
}

func encodeJPEGQ(t testing.TB, img image.Image, q int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
