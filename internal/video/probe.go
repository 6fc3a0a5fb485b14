package video

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/protocol"
)

// File is a video file opened inside its library.
type File struct {
	f         *os.File
	Container Container
	Size      int64
}

// Open opens rel inside the library root: never outside it, never through
// a symlink that leaves it, never blocking on a FIFO, only a regular file
// whose content sniffs as a video container. Errors: source_missing,
// path_violation, video_unreadable (not a video, zero bytes), io_error.
func Open(root, rel string) (*File, error) {
	f, err := openInRoot(root, rel)
	switch {
	case err == nil:
	case errors.Is(err, syscall.ELOOP), escapes(root, rel):
		return nil, protocol.Wrap(protocol.ErrPathViolation, err)
	case errors.Is(err, fs.ErrNotExist):
		return nil, protocol.Wrap(protocol.ErrSourceMissing, err)
	default:
		return nil, protocol.Wrap(protocol.ErrIOError, err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, protocol.Wrap(protocol.ErrIOError, err)
	case !st.Mode().IsRegular():
		f.Close()
		return nil, protocol.Errorf(protocol.ErrVideoUnreadable, "%s is not a regular file", rel)
	}
	return sniffed(f, rel, st.Size())
}

// openInRoot opens rel for reading through an os.Root on root, without
// blocking (a FIFO would otherwise wait for a writer).
func openInRoot(root, rel string) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func sniffed(f *os.File, rel string, size int64) (*File, error) {
	if size == 0 {
		f.Close()
		return nil, protocol.Errorf(protocol.ErrVideoUnreadable, "%s is empty", rel)
	}
	c, ok := SniffFile(f)
	if !ok {
		f.Close()
		return nil, protocol.Errorf(protocol.ErrVideoUnreadable, "%s is not a video container this reader knows", rel)
	}
	return &File{f: f, Container: c, Size: size}, nil
}

// escapes tells why os.Root refused rel (it exports no error for it): the
// path, its symlinks resolved, leaves root.
func escapes(root, rel string) bool {
	_, err := pathsafe.Resolve(root, rel)
	return errors.Is(err, pathsafe.ErrOutside)
}

// Close closes the file.
func (v *File) Close() error { return v.f.Close() }

// Info is what ffprobe says of a video file.
type Info struct {
	Container Container
	// Duration is zero when the container does not say.
	Duration time.Duration
	// Width and Height are the displayed size (rotation applied); zero
	// when there is no video stream.
	Width, Height int
	// VideoCodec and AudioCodec are ffmpeg's codec names of the first
	// stream of each kind; "" when there is none.
	VideoCodec, AudioCodec string
	// Rotation is the display rotation in degrees (0, 90, 180, 270).
	Rotation int
}

// probeOutLimit bounds ffprobe's JSON (a file with thousands of streams).
const probeOutLimit = 1 << 20

// Probe runs ffprobe on v. Errors: video_unreadable, video_timeout, or the
// context's error.
func Probe(ctx context.Context, v *File, lim Limits) (Info, error) {
	lim = lim.withDefaults()
	args := []string{"-v", "error", "-hide_banner", "-protocol_whitelist", "file", "-f", v.Container.demuxer(),
		"-show_entries", "format=duration:stream=codec_type,codec_name,width,height,duration:stream_tags=rotate:stream_side_data=rotation",
		"-of", "json", inputURL}
	out, err := run(ctx, lim, lim.FFprobe, args, v.f, probeOutLimit)
	if err != nil {
		return Info{}, err
	}
	info, err := parseProbe(out)
	if err != nil {
		return Info{}, protocol.Errorf(protocol.ErrVideoUnreadable, "ffprobe output: %v", err)
	}
	info.Container = v.Container
	return info, nil
}

type probeJSON struct {
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
	Streams []struct {
		CodecType string            `json:"codec_type"`
		CodecName string            `json:"codec_name"`
		Width     int               `json:"width"`
		Height    int               `json:"height"`
		Duration  string            `json:"duration"`
		Tags      map[string]string `json:"tags"`
		SideData  []struct {
			Rotation *float64 `json:"rotation"`
		} `json:"side_data_list"`
	} `json:"streams"`
}

func parseProbe(out []byte) (Info, error) {
	var p probeJSON
	if err := json.Unmarshal(out, &p); err != nil {
		return Info{}, err
	}
	info := Info{Duration: seconds(p.Format.Duration)}
	for _, s := range p.Streams {
		switch {
		case s.CodecType == "video" && info.VideoCodec == "" && s.Width > 0:
			info.VideoCodec, info.Width, info.Height = s.CodecName, s.Width, s.Height
			info.Rotation = rotation(s.Tags["rotate"], s.SideData)
			if info.Rotation == 90 || info.Rotation == 270 {
				info.Width, info.Height = info.Height, info.Width
			}
			if info.Duration == 0 {
				info.Duration = seconds(s.Duration)
			}
		case s.CodecType == "audio" && info.AudioCodec == "":
			info.AudioCodec = s.CodecName
			if info.Duration == 0 {
				info.Duration = seconds(s.Duration)
			}
		}
	}
	return info, nil
}

// seconds parses ffprobe's decimal seconds; nonsense is zero.
func seconds(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || f > 1e9 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// rotation reads the display matrix (side data, counter-clockwise
// degrees, negative for clockwise) or the older rotate tag (clockwise),
// as clockwise degrees in 0..270.
func rotation(tag string, side []struct {
	Rotation *float64 `json:"rotation"`
}) int {
	deg := 0
	for _, sd := range side {
		if sd.Rotation != nil {
			deg = -int(math.Round(*sd.Rotation))
		}
	}
	if n, err := strconv.Atoi(tag); err == nil && deg == 0 {
		deg = n
	}
	deg %= 360
	if deg < 0 {
		deg += 360
	}
	return deg / 90 * 90
}
