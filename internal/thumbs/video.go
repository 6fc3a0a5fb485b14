package thumbs

import (
	"context"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/internal/video"
	"github.com/bindery-nas/bindery/protocol"
)

// blackMean is the mean brightness (0..255) under which a frame is taken
// for black: a fade, a title card's background, a letterboxed night.
const blackMean = 12

// renderVideo renders a video's cover from one frame: at 10% of its
// duration, or, when that frame is black, the brightest of the later
// cover points. The frame goes through the same libvips pipeline as a
// page, so width, byte budget and format are the comics' own. The file is
// opened confined to its library (video.Open), and ffmpeg reads it only
// through that descriptor.
func (r *Renderer) renderVideo(ctx context.Context, src thumbnails.CoverSource, o Options, lim video.Limits) (Cover, error) {
	if src.IsMissing {
		return Cover{}, protocol.Errorf(protocol.ErrSourceMissing, "file %d is missing from its library", src.FileID)
	}
	if err := r.checkLibrary(src); err != nil {
		return Cover{}, err
	}
	v, err := video.Open(src.LibraryPath, src.RelativePath)
	if err != nil {
		return Cover{}, err
	}
	defer v.Close()
	duration := time.Duration(model.Deref(src.DurationMS)) * time.Millisecond
	if src.DurationMS == nil {
		info, err := video.Probe(ctx, v, lim)
		if err != nil {
			return Cover{}, err
		}
		duration = info.Duration
	}
	o = o.withDefaults()
	im, err := brightestFrame(ctx, v, duration, o, lim)
	if err != nil {
		return Cover{}, err
	}
	defer im.close()
	return encodeCover(im, o)
}

// brightestFrame decodes the frame at each cover point in turn until one
// is not black, and returns the brightest seen. A later point that fails
// (a file shorter than its container says) keeps the frame found so far.
func brightestFrame(ctx context.Context, v *video.File, duration time.Duration, o Options, lim video.Limits) (*vimage, error) {
	var best *vimage
	var bestMean float64
	for _, p := range video.CoverPoints {
		frame, err := video.FrameWithin(ctx, v, video.At(duration, p), 2*o.Width, lim)
		if err == nil {
			var im *vimage
			if im, err = decodeCover(frame, o); err == nil {
				mean, merr := im.mean()
				if merr != nil || (best != nil && mean <= bestMean) {
					im.close()
				} else {
					if best != nil {
						best.close()
					}
					best, bestMean = im, mean
				}
			}
		}
		switch {
		case err != nil && best == nil:
			return nil, err
		case err != nil || bestMean >= blackMean:
			return best, nil
		}
	}
	return best, nil
}
