package thumbs

import (
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// Reader pages (GET /files/{id}/pages/{n}) go through the same decoder
// limits, path checks and error codes as covers: this file is their door.

// ImageSize reads an encoded page's dimensions from its header, without
// decoding pixels. Errors are decode_error.
func ImageSize(buf []byte) (w, h int, err error) {
	setupVips(1)
	return header(buf)
}

// PageQuality is the encoder quality of a page shrunk for a reader.
const PageQuality = 85

// ShrinkPage shrinks an encoded page to width pixels (aspect ratio kept,
// shrink-on-load, never enlarged), as JPEG when the source is a JPEG and
// as WebP otherwise (alpha kept). Sources over maxPixels are refused
// (decompression bombs) with source_too_large; undecodable ones are
// decode_error.
func ShrinkPage(buf []byte, width int, maxPixels int64) ([]byte, protocol.ImageFormat, error) {
	setupVips(1)
	w, h, err := header(buf)
	if err != nil {
		return nil, "", err
	}
	if int64(w)*int64(h) > maxPixels {
		return nil, "", protocol.Errorf(protocol.ErrSourceTooLarge, "image is %d×%d, more than %d pixels", w, h, maxPixels)
	}
	format := protocol.ImageWebP
	if len(buf) > 2 && buf[0] == 0xff && buf[1] == 0xd8 {
		format = protocol.ImageJPEG
	}
	im, err := thumbnail(buf, width, max(h, 1), format == protocol.ImageJPEG)
	if err != nil {
		return nil, "", err
	}
	defer im.close()
	data, err := im.encode(format, PageQuality)
	return data, format, err
}

// ResolveSource resolves a file under its library after checking the
// library lies under roots (nil: its own path only), by realpath. Errors
// are path_violation, source_missing or io_error.
func ResolveSource(roots pathsafe.Roots, src thumbnails.CoverSource) (string, error) {
	r := Renderer{cfg: Config{LibraryRoots: roots}}
	return r.resolveSource(src)
}

// SourceError maps an archive error onto the renderer's codes
// (decode_error, source_missing, io_error; coded errors keep theirs).
func SourceError(err error) error { return sourceErr(err) }

// DefaultMaxPixels is the pixel limit of a decoded page or cover.
const DefaultMaxPixels = 16384 * 16384
