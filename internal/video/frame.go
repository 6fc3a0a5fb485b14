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

// keyframeReach is how far before a cover point, in seconds, the keyframe
// a seek lands on may lie and still give the cover: longer than common
// GOPs (x264's default is 10 s at 25 fps). From a keyframe further back
// the frames are decoded up to that reach.
const keyframeReach = 60

// CoverPoints are where a cover frame is looked for, as fractions of the
// duration: 10% first (past opening titles), later points only when the
// earlier frame was black.
var CoverPoints = []float64{0.10, 0.25, 0.50}

// At is the time at fraction p of d.
func At(d time.Duration, p float64) time.Duration { return time.Duration(float64(d) * p) }

// Frame decodes one frame of the first real video stream (not cover art)
// near at, and returns it as a JPEG for libvips' thumbnail path, whose
// shrink-on-load makes the full-size frame cheap to shrink.
// The seek lands on the keyframe at or before at and takes the first frame
// decoded there, as ffmpegthumbnailer does (within keyframeReach): exact
// to the frame would mean decoding up to a whole GOP for a cover. Display
// rotation is applied.
// Errors: video_unreadable (no video stream, decode failure), video_timeout.
func Frame(ctx context.Context, v *File, at time.Duration, lim Limits) ([]byte, error) {
	return FrameWithin(ctx, v, at, 0, lim)
}

// FrameWithin is Frame shrunk by ffmpeg to at most maxWidth pixels wide,
// aspect kept; 0 keeps the full size. Converting and encoding a 1080p
// frame costs ffmpeg about as much as decoding it, so a cover asks for
// twice its width and leaves the last, better resize to libvips.
func FrameWithin(ctx context.Context, v *File, at time.Duration, maxWidth int, lim Limits) ([]byte, error) {
	lim = lim.withDefaults()
	// The keyframe is stamped before at: without -fps_mode passthrough
	// ffmpeg drops every frame stamped before at, so it decodes and
	// converts the GOP up to at after all (7× the time of a 1080p cover
	// with a keyframe every 10 s). The select filter still drops frames
	// more than keyframeReach back, which is where a seek past the end
	// lands: such a point keeps having no frame. One decoder thread: frame
	// threads only decode frames past the one wanted, and the engine runs
	// one render per core already.
	filter := "select='isnan(t)+gte(t," + strconv.Itoa(-keyframeReach) + ")'"
	if maxWidth > 0 {
		filter += ",scale=w='min(iw," + strconv.Itoa(maxWidth) + ")':h=-2"
	}
	args := []string{"-nostdin", "-v", "error", "-hide_banner", "-protocol_whitelist", "file,pipe",
		"-noaccurate_seek", "-ss", strconv.FormatFloat(at.Seconds(), 'f', 3, 64), "-threads", "1",
		"-f", v.Container.demuxer(), "-i", inputURL,
		"-map", "0:V:0", "-frames:v", "1", "-an", "-sn", "-dn", "-vf", filter, "-fps_mode", "passthrough",
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
