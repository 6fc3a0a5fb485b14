// Package liblzma decodes the raw LZMA and LZMA2 streams of 7z folders
// with xz-utils' liblzma, through cgo. sevenzip's own decoders wrap the
// pure-Go ulikunitz/xz, which decodes at about half liblzma's speed on
// this machine (xz -d against lzma.Reader on the same 30 MB stream): a
// cb7's pages, covers and page digests are bound by it. liblzma is
// already linked into the daemons through libvips (libtiff), so this
// adds no dependency.
//
// The window is capped to the stream's unpacked size (a decoder never
// looks further back than what it has written) and refused past a limit,
// so a header that claims a huge dictionary cannot make it allocate one.
// C memory (the lzma_stream) never holds a Go pointer after a call
// returns: each call hands liblzma the Go buffers and takes them back.
package liblzma

/*
#cgo pkg-config: liblzma
#include <lzma.h>
#include <stdlib.h>

// bindery_raw_decoder starts a raw LZMA1 (with the unpacked size known, an
// end marker allowed) or LZMA2 decoder from 7z's coder properties, with
// its window capped to the unpacked size and refused over limit.
static lzma_ret bindery_raw_decoder(lzma_stream *s, int lzma2, const uint8_t *props, size_t props_size,
		uint64_t size, uint64_t limit) {
	lzma_filter f[2];
	f[0].id = lzma2 ? LZMA_FILTER_LZMA2 : LZMA_FILTER_LZMA1EXT;
	f[0].options = NULL;
	lzma_ret ret = lzma_properties_decode(&f[0], NULL, props, props_size);
	if (ret != LZMA_OK) {
		return ret;
	}
	lzma_options_lzma *o = f[0].options;
	if (o->dict_size > size) {
		o->dict_size = size < LZMA_DICT_SIZE_MIN ? LZMA_DICT_SIZE_MIN : (uint32_t)size;
	}
	if (o->dict_size > limit) {
		free(o);
		return LZMA_MEMLIMIT_ERROR;
	}
	if (!lzma2) {
		o->ext_flags = LZMA_LZMA1EXT_ALLOW_EOPM;
		o->ext_size_low = (uint32_t)size;
		o->ext_size_high = (uint32_t)(size >> 32);
	}
	f[1].id = LZMA_VLI_UNKNOWN;
	f[1].options = NULL;
	ret = lzma_raw_decoder(s, f);
	free(o);
	return ret;
}

// bindery_code runs the decoder over the given buffers and forgets them.
static lzma_ret bindery_code(lzma_stream *s, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
		size_t *in_used, size_t *out_used) {
	s->next_in = in;
	s->avail_in = in_len;
	s->next_out = out;
	s->avail_out = out_len;
	lzma_ret ret = lzma_code(s, LZMA_RUN);
	*in_used = in_len - s->avail_in;
	*out_used = out_len - s->avail_out;
	s->next_in = NULL;
	s->avail_in = 0;
	s->next_out = NULL;
	s->avail_out = 0;
	return ret;
}

static lzma_stream *bindery_new_stream(void) {
	lzma_stream *s = calloc(1, sizeof(lzma_stream));
	if (s != NULL) {
		lzma_stream init = LZMA_STREAM_INIT;
		*s = init;
	}
	return s;
}

static void bindery_free_stream(lzma_stream *s) {
	lzma_end(s);
	free(s);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"unsafe"
)

// ErrWindowTooLarge is a stream whose window, capped to its unpacked
// size, is over the caller's limit.
var ErrWindowTooLarge = errors.New("lzma: window over the limit")

// ErrCorrupt is a stream liblzma cannot decode (bad properties or data,
// or data that ends early).
var ErrCorrupt = errors.New("lzma: corrupt stream")

// Reader decodes one raw stream; Close frees its C memory (and, should a
// caller forget, a cleanup does once the Reader is unreachable).
type Reader struct {
	h          *handle
	src        io.Reader
	buf        []byte
	start, end int
	srcEOF     bool
	done       bool
}

// NewLZMA reads 7z's LZMA coder: props are its 5 property bytes, size the
// unpacked size, limit the largest window allowed.
func NewLZMA(props []byte, size uint64, src io.Reader, limit uint64) (*Reader, error) {
	return newReader(false, props, size, src, limit)
}

// NewLZMA2 reads 7z's LZMA2 coder: props is its 1 property byte, size the
// unpacked size (the window's cap), limit the largest window allowed.
func NewLZMA2(props []byte, size uint64, src io.Reader, limit uint64) (*Reader, error) {
	return newReader(true, props, size, src, limit)
}

func newReader(lzma2 bool, props []byte, size uint64, src io.Reader, limit uint64) (*Reader, error) {
	if len(props) == 0 {
		return nil, fmt.Errorf("%w: no properties", ErrCorrupt)
	}
	s := C.bindery_new_stream()
	if s == nil {
		return nil, errors.New("lzma: out of memory")
	}
	flag := C.int(0)
	if lzma2 {
		flag = 1
	}
	ret := C.bindery_raw_decoder(s, flag, (*C.uint8_t)(unsafe.Pointer(&props[0])), C.size_t(len(props)),
		C.uint64_t(size), C.uint64_t(limit))
	if ret != C.LZMA_OK {
		C.bindery_free_stream(s)
		return nil, codeError(ret)
	}
	r := &Reader{h: &handle{s}, src: src, buf: make([]byte, 64<<10)}
	runtime.AddCleanup(r, (*handle).free, r.h)
	return r, nil
}

// handle owns the C stream; free is idempotent.
type handle struct{ s *C.lzma_stream }

func (h *handle) free() {
	if h.s != nil {
		C.bindery_free_stream(h.s)
		h.s = nil
	}
}

// Read decodes into p.
func (r *Reader) Read(p []byte) (int, error) {
	if r.h.s == nil {
		return 0, errors.New("lzma: read after close")
	}
	if r.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if r.start == r.end && !r.srcEOF {
			if err := r.fill(); err != nil {
				return 0, err
			}
		}
		var in *C.uint8_t
		if r.start < r.end {
			in = (*C.uint8_t)(unsafe.Pointer(&r.buf[r.start]))
		}
		var inUsed, outUsed C.size_t
		ret := C.bindery_code(r.h.s, in, C.size_t(r.end-r.start), (*C.uint8_t)(unsafe.Pointer(&p[0])), C.size_t(len(p)), &inUsed, &outUsed)
		r.start += int(inUsed)
		n := int(outUsed)
		switch {
		case ret == C.LZMA_STREAM_END:
			r.done = true
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case ret != C.LZMA_OK && ret != C.LZMA_BUF_ERROR:
			return n, codeError(ret)
		case n > 0:
			return n, nil
		case r.srcEOF && r.start == r.end:
			return 0, fmt.Errorf("%w: data ends early", ErrCorrupt)
		}
	}
}

func (r *Reader) fill() error {
	n, err := r.src.Read(r.buf)
	r.start, r.end = 0, n
	switch {
	case errors.Is(err, io.EOF):
		r.srcEOF = true
	case err != nil:
		return err
	}
	return nil
}

// Close frees the decoder.
func (r *Reader) Close() error {
	r.h.free()
	return nil
}

func codeError(ret C.lzma_ret) error {
	switch ret {
	case C.LZMA_MEMLIMIT_ERROR:
		return ErrWindowTooLarge
	case C.LZMA_MEM_ERROR:
		return errors.New("lzma: out of memory")
	case C.LZMA_OPTIONS_ERROR:
		return fmt.Errorf("%w: unsupported properties", ErrCorrupt)
	default:
		return fmt.Errorf("%w (liblzma code %d)", ErrCorrupt, int(ret))
	}
}
