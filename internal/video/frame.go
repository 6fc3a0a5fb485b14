package video

import (
	"context"
	"strconv"
	"time"

	"github.com/bindery-nas/bindery/protocol"
)

// frameOutLimit bounds one encoded frame (an 8K frame at JPEG quality 2
// is well under it).
const frameOutLimit = 64 << 20

// CoverPoints are where a cover frame is looked for, as fractions of the
// duration: 10% first (past opening titles), later points only when the
// earlier frame was black.
var CoverPoints = []float64{0.10, 0.25, 0.50}

// At is the time at fraction p of d.
func At(d time.Duration, p float64) time.Duration { return time.Duration(float64(d) * p) }

// Frame decodes one frame of the first real video stream (not cover art)
// at or just after at, and returns it as a JPEG for libvips' thumbnail
// path, whose shrink-on-load makes the full-size frame cheap to shrink.
// The seek lands on the keyframe at or before at and takes the first frame
// decoded there, as ffmpegthumbnailer does: exact to the frame would mean
// decoding up to a whole GOP for a cover. Display rotation is applied.
// Errors: video_unreadable (no video stream, decode failure), video_timeout.
func Frame(ctx context.Context, v *File, at time.Duration, lim Limits) ([]byte, error) {
	lim = lim.withDefaults()
	args := []string{"-nostdin", "-v", "error", "-hide_banner", "-protocol_whitelist", "file,pipe",
		"-noaccurate_seek", "-ss", strconv.FormatFloat(at.Seconds(), 'f', 3, 64),
		"-f", v.Container.demuxer(), "-i", inputURL,
		"-map", "0:V:0", "-frames:v", "1", "-an", "-sn", "-dn",
		"-f", "image2pipe", "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p", "pipe:1"}
	out, err := run(ctx, lim, lim.FFmpeg, args, v.f, frameOutLimit)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, protocol.Errorf(protocol.ErrVideoUnreadable, "no video frame at %s", at.Round(time.Millisecond))
	}
	return out, nil
}
