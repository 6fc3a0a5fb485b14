package thumbs

import (
	"github.com/bindery-nas/bindery/protocol"
)

// Options shape one cover render. They come from the settings scan.cover.*
// (see OptionsFrom); zero values take the settings' defaults.
type Options struct {
	// Width of the cover in pixels, aspect ratio kept; default 320. Images
	// narrower than Width are never enlarged.
	Width int
	// MaxHeight caps the height of very tall images (a 1×20000 strip);
	// default 8×Width.
	MaxHeight int
	// Format of the encoded cover; default webp.
	Format protocol.ImageFormat
	// TargetBytes is the byte budget; default 48 KiB.
	TargetBytes int
	// QualityStart, QualityStep, QualityMin: the encoder starts at
	// QualityStart and steps down by QualityStep while the result is over
	// budget, never below QualityMin; defaults 85, 10, 40. When even
	// QualityMin is over budget, the QualityMin encode is kept (a cover
	// over budget beats no cover) and Cover.OverBudget says so.
	QualityStart, QualityStep, QualityMin int
	// MaxPixels refuses sources whose header claims more pixels than this
	// (decompression bombs) with source_too_large; default 268,435,456
	// (16384×16384).
	MaxPixels int64
}

func (o Options) withDefaults() Options {
	if o.Width <= 0 {
		o.Width = 320
	}
	if o.MaxHeight <= 0 {
		o.MaxHeight = 8 * o.Width
	}
	if o.Format == "" {
		o.Format = protocol.ImageWebP
	}
	if o.TargetBytes <= 0 {
		o.TargetBytes = 48 << 10
	}
	if o.QualityStart <= 0 {
		o.QualityStart = 85
	}
	if o.QualityStep <= 0 {
		o.QualityStep = 10
	}
	if o.QualityMin <= 0 {
		o.QualityMin = 40
	}
	o.QualityMin = min(o.QualityMin, o.QualityStart)
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	return o
}

// Cover is an encoded cover.
type Cover struct {
	Data          []byte
	Width, Height int
	// Quality is the encoder quality of Data.
	Quality int
	// Attempts is how many encodes it took to fit the budget.
	Attempts int
	// OverBudget is true when even QualityMin did not fit TargetBytes.
	OverBudget bool
}

// RenderCover decodes an encoded page held in buf, shrinks it with
// libvips' thumbnail path (shrink-on-load, EXIF auto-rotation, sRGB) and
// encodes it within the byte budget, metadata stripped. The decode happens
// once; each quality attempt only re-encodes the small image. Errors are
// *protocol.Error: decode_error, source_too_large.
func RenderCover(buf []byte, o Options) (Cover, error) {
	o = o.withDefaults()
	im, err := decodeCover(buf, o)
	if err != nil {
		return Cover{}, err
	}
	defer im.close()
	return encodeCover(im, o)
}

// decodeCover decodes buf and shrinks it to the cover's size. o must have
// its defaults.
func decodeCover(buf []byte, o Options) (*vimage, error) {
	w, h, err := header(buf)
	if err != nil {
		return nil, err
	}
	if int64(w)*int64(h) > o.MaxPixels {
		return nil, protocol.Errorf(protocol.ErrSourceTooLarge, "image is %d×%d, more than %d pixels", w, h, o.MaxPixels)
	}
	return thumbnail(buf, o.Width, o.MaxHeight, o.Format == protocol.ImageJPEG)
}

// encodeCover encodes im within the byte budget at falling quality. o
// must have its defaults.
func encodeCover(im *vimage, o Options) (Cover, error) {
	c := Cover{Width: im.width(), Height: im.height()}
	for q := o.QualityStart; ; q -= o.QualityStep {
		q = max(q, o.QualityMin)
		data, err := im.encode(o.Format, q)
		if err != nil {
			return Cover{}, err
		}
		c.Data, c.Quality = data, q
		c.Attempts++
		if len(data) <= o.TargetBytes {
			return c, nil
		}
		if q == o.QualityMin {
			c.OverBudget = true
			return c, nil
		}
	}
}
