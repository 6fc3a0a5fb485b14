package thumbs

/*
#cgo pkg-config: vips
#include <vips/vips.h>

// bindery_dhash_pixels shrinks an encoded image to exactly 9×8 (aspect
// ratio ignored) through libvips' thumbnail path, flattens any alpha onto
// white, converts to 8-bit greyscale and copies the 72 pixels into px.
static int bindery_dhash_pixels(void *buf, size_t len, unsigned char *px) {
	VipsImage *t = NULL, *c = NULL;
	if (vips_thumbnail_buffer(buf, len, &t, 9, "height", 8, "size", VIPS_SIZE_FORCE, NULL))
		return -1;
	if (vips_image_hasalpha(t)) {
		VipsArrayDouble *bg = vips_array_double_newv(1, 255.0);
		int r = vips_flatten(t, &c, "background", bg, NULL);
		vips_area_unref(VIPS_AREA(bg));
		g_object_unref(t);
		if (r) return -1;
		t = c; c = NULL;
	}
	if (vips_colourspace(t, &c, VIPS_INTERPRETATION_B_W, NULL)) { g_object_unref(t); return -1; }
	g_object_unref(t); t = c; c = NULL;
	if (vips_extract_band(t, &c, 0, NULL)) { g_object_unref(t); return -1; }
	g_object_unref(t); t = c; c = NULL;
	if (vips_cast_uchar(t, &c, NULL)) { g_object_unref(t); return -1; }
	g_object_unref(t); t = c;
	if (vips_image_get_width(t) != 9 || vips_image_get_height(t) != 8) {
		vips_error("bindery", "hash image is %dx%d, not 9x8", vips_image_get_width(t), vips_image_get_height(t));
		g_object_unref(t);
		return -1;
	}
	size_t n = 0;
	void *mem = vips_image_write_to_memory(t, &n);
	g_object_unref(t);
	if (!mem) return -1;
	if (n != 72) { g_free(mem); vips_error("bindery", "hash image has %zu bytes", n); return -1; }
	memcpy(px, mem, 72);
	g_free(mem);
	return 0;
}
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/bindery-nas/bindery/protocol"
)

// CoverHash is the 64-bit difference hash (dHash) of an encoded cover:
// the image shrunk by libvips to 9×8 greyscale pixels, and for each of the
// 8 rows one bit per adjacent pair, set when the left pixel is darker than
// the right. Bit 63−(8·row+col) holds the pair (col, col+1) of row.
//
// dHash rather than pHash: what the report must see through is the same
// picture re-encoded, resized or brightened, and a dHash is made of the
// signs of local gradients, which none of these change: a JPEG at quality
// 50 or a uniformly brighter scan moves a few pixels of the 9×8 average at
// most. pHash (a 32×32 DCT) adds robustness to crops and small rotations
// that two scans of one cover rarely need here, at the cost of a DCT in Go
// and a 32×32 decode; dHash needs one libvips shrink of the small cover
// workerd already rendered (measured in TestCoverHashDistances and
// BenchmarkCoverHash).
//
// It hashes the encoded cover, not the page: the cached file of an old
// cover gives the same hash a new render would. Errors are
// *protocol.Error with code decode_error.
func CoverHash(cover []byte) (uint64, error) {
	if len(cover) == 0 {
		return 0, protocol.Errorf(protocol.ErrDecodeError, "cover hash: empty image")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer C.vips_thread_shutdown()
	var px [72]C.uchar
	if C.bindery_dhash_pixels(unsafe.Pointer(&cover[0]), C.size_t(len(cover)), &px[0]) != 0 {
		return 0, protocol.Wrap(protocol.ErrDecodeError, vipsError("cover hash"))
	}
	runtime.KeepAlive(cover)
	var h uint64
	for row := range 8 {
		for col := range 8 {
			h <<= 1
			if px[row*9+col] < px[row*9+col+1] {
				h |= 1
			}
		}
	}
	return h, nil
}
