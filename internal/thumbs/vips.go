package thumbs

/*
#cgo pkg-config: vips
#include <stdlib.h>
#include <vips/vips.h>

// bindery_thumbnail runs libvips' thumbnail path on an encoded buffer
// (shrink-on-load for JPEG/WebP, EXIF auto-rotation, import of an embedded
// or fallback CMYK profile), converts to 8-bit sRGB and copies the small
// result into memory, so that every decode error surfaces here and later
// encodes never decode the source again. The buffer is not retained after
// return: the operation cache is disabled at start (see setupVips).
static int bindery_thumbnail(void *buf, size_t len, int width, int height, int flatten, VipsImage **out) {
	VipsImage *t = NULL, *c = NULL, *m = NULL;
	*out = NULL;
	if (vips_thumbnail_buffer(buf, len, &t, width,
			"height", height,
			"size", VIPS_SIZE_DOWN,
			"export_profile", "srgb",
			"option_string", "fail_on=truncated",
			NULL))
		return -1;
	// Thumbnail already exports profiled images to sRGB; images without a
	// profile (16-bit, Lab, grey+alpha, ...) are normalized here.
	VipsInterpretation want = vips_image_get_bands(t) <= 2 ? VIPS_INTERPRETATION_B_W : VIPS_INTERPRETATION_sRGB;
	if (vips_image_get_interpretation(t) != want || vips_image_get_format(t) != VIPS_FORMAT_UCHAR) {
		if (vips_colourspace(t, &c, want, NULL)) { g_object_unref(t); return -1; }
		g_object_unref(t); t = c; c = NULL;
		if (vips_image_get_format(t) != VIPS_FORMAT_UCHAR) {
			if (vips_cast_uchar(t, &c, NULL)) { g_object_unref(t); return -1; }
			g_object_unref(t); t = c; c = NULL;
		}
	}
	if (flatten && vips_image_hasalpha(t)) {
		VipsArrayDouble *bg = vips_array_double_newv(1, 255.0);
		int r = vips_flatten(t, &c, "background", bg, NULL);
		vips_area_unref(VIPS_AREA(bg));
		g_object_unref(t);
		if (r) return -1;
		t = c;
	}
	m = vips_image_copy_memory(t);
	g_object_unref(t);
	if (!m) return -1;
	*out = m;
	return 0;
}

static int bindery_header(void *buf, size_t len, int *w, int *h) {
	VipsImage *img = vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
	if (!img) return -1;
	*w = vips_image_get_width(img);
	*h = vips_image_get_height(img);
	g_object_unref(img);
	return 0;
}

static int bindery_save_webp(VipsImage *in, int q, void **buf, size_t *len) {
	return vips_webpsave_buffer(in, buf, len, "Q", q, "strip", TRUE, NULL);
}

static int bindery_save_jpeg(VipsImage *in, int q, void **buf, size_t *len) {
	return vips_jpegsave_buffer(in, buf, len, "Q", q, "strip", TRUE, "optimize_coding", TRUE, NULL);
}

static void bindery_unref(VipsImage *in) { g_object_unref(in); }

static int bindery_avg(VipsImage *in, double *out) { return vips_avg(in, out, NULL); }

static void bindery_drop_log(const gchar *domain, GLogLevelFlags level, const gchar *msg, gpointer data) {}

// bindery_quiet drops libvips' warnings ("error in tile", "profile
// incompatible"): a render that fails reports its error as the row's
// error_code, and one that succeeds needs no log line per damaged tile.
static void bindery_quiet(void) {
	g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING, bindery_drop_log, NULL);
}

// bindery_pixels decodes buf fully into a malloc'ed pixel array (for
// checks of rendered covers).
static void *bindery_pixels(void *buf, size_t len, int *w, int *h, int *bands, char **interp, size_t *size) {
	VipsImage *img = vips_image_new_from_buffer(buf, len, "", NULL);
	if (!img) return NULL;
	*w = vips_image_get_width(img);
	*h = vips_image_get_height(img);
	*bands = vips_image_get_bands(img);
	*interp = (char *) vips_enum_nick(VIPS_TYPE_INTERPRETATION, vips_image_get_interpretation(img));
	void *mem = vips_image_write_to_memory(img, size);
	g_object_unref(img);
	return mem;
}
*/
import "C"

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"

	"github.com/h2non/bimg"

	"github.com/bindery-nas/bindery/protocol"
)

// vipsOnce bounds libvips once per process: bimg starts libvips in its
// package init; here its operation cache is turned off (every source is
// different, a cache only pins memory and would keep references to our
// buffers) and its thread pool is bounded.
//
// bimg only starts libvips; covers do not use its pipeline. They call
// vips_thumbnail_buffer (bindery_thumbnail above): one libvips operation
// shrinks on load, rotates by EXIF, imports a CMYK profile and converts to
// sRGB, every decode error surfaces in that one call, and the result is
// copied out so the source buffer is never kept. That one call is what
// the renderer's memory budget is measured on (BenchmarkCoverPeakRSS).
var vipsOnce sync.Once

func setupVips(concurrency int) {
	vipsOnce.Do(func() {
		bimg.VipsCacheSetMax(0)
		bimg.VipsCacheSetMaxMem(0)
		C.vips_concurrency_set(C.int(concurrency))
		C.bindery_quiet()
	})
}

// image is a decoded, resized cover held in libvips memory.
type vimage struct {
	p *C.VipsImage
}

func (im *vimage) width() int  { return int(C.vips_image_get_width(im.p)) }
func (im *vimage) height() int { return int(C.vips_image_get_height(im.p)) }

func (im *vimage) close() {
	if im.p != nil {
		C.bindery_unref(im.p)
		im.p = nil
	}
}

// mean is the average of every band of every pixel, 0..255: how bright
// the cover is (a black frame is near 0).
func (im *vimage) mean() (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer C.vips_thread_shutdown()
	var avg C.double
	if C.bindery_avg(im.p, &avg) != 0 {
		return 0, protocol.Wrap(protocol.ErrDecodeError, vipsError("average"))
	}
	return float64(avg), nil
}

// vipsError takes libvips' thread-local error text.
func vipsError(what string) error {
	msg := C.GoString(C.vips_error_buffer())
	C.vips_error_clear()
	return errors.New(what + ": " + msg)
}

// header reads the dimensions without decoding pixels.
func header(buf []byte) (w, h int, err error) {
	if len(buf) == 0 {
		return 0, 0, protocol.Errorf(protocol.ErrDecodeError, "empty image")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer C.vips_thread_shutdown()
	var cw, ch C.int
	if C.bindery_header(unsafe.Pointer(&buf[0]), C.size_t(len(buf)), &cw, &ch) != 0 {
		return 0, 0, protocol.Wrap(protocol.ErrDecodeError, vipsError("read header"))
	}
	return int(cw), int(ch), nil
}

// thumbnail decodes buf and shrinks it to fit width×height, never
// enlarging. flatten drops alpha onto white (for JPEG output).
func thumbnail(buf []byte, width, height int, flatten bool) (*vimage, error) {
	if len(buf) == 0 {
		return nil, protocol.Errorf(protocol.ErrDecodeError, "empty image")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer C.vips_thread_shutdown()
	fl := C.int(0)
	if flatten {
		fl = 1
	}
	var out *C.VipsImage
	if C.bindery_thumbnail(unsafe.Pointer(&buf[0]), C.size_t(len(buf)), C.int(width), C.int(height), fl, &out) != 0 {
		return nil, protocol.Wrap(protocol.ErrDecodeError, vipsError("decode"))
	}
	runtime.KeepAlive(buf)
	return &vimage{p: out}, nil
}

// decoded is a fully decoded image: 8-bit pixels, bands per pixel.
type decoded struct {
	W, H, Bands    int
	Interpretation string
	Pix            []byte
}

// At returns the bands of pixel (x, y).
func (d decoded) At(x, y int) []byte {
	i := (y*d.W + x) * d.Bands
	return d.Pix[i : i+d.Bands]
}

// decodeAll decodes an encoded image completely; it exists to check
// rendered covers.
func decodeAll(buf []byte) (decoded, error) {
	if len(buf) == 0 {
		return decoded{}, errors.New("empty image")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer C.vips_thread_shutdown()
	var w, h, bands C.int
	var interp *C.char
	var size C.size_t
	mem := C.bindery_pixels(unsafe.Pointer(&buf[0]), C.size_t(len(buf)), &w, &h, &bands, &interp, &size)
	if mem == nil {
		return decoded{}, vipsError("decode")
	}
	defer C.g_free(C.gpointer(mem))
	return decoded{W: int(w), H: int(h), Bands: int(bands), Interpretation: C.GoString(interp),
		Pix: C.GoBytes(mem, C.int(size))}, nil
}

// encode saves im as format at quality q, metadata stripped.
func (im *vimage) encode(format protocol.ImageFormat, q int) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer C.vips_thread_shutdown()
	var p unsafe.Pointer
	var n C.size_t
	var rc C.int
	if format == protocol.ImageJPEG {
		rc = C.bindery_save_jpeg(im.p, C.int(q), &p, &n)
	} else {
		rc = C.bindery_save_webp(im.p, C.int(q), &p, &n)
	}
	if rc != 0 {
		return nil, protocol.Wrap(protocol.ErrDecodeError, vipsError("encode "+string(format)))
	}
	defer C.g_free(C.gpointer(p))
	return C.GoBytes(p, C.int(n)), nil
}
