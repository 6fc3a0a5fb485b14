package scan

import (
	"path"
	"slices"
	"strings"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/internal/video"
	"github.com/bindery-nas/bindery/protocol"
)

// isVideoName: the name has a video extension.
func isVideoName(name string) bool {
	return slices.Contains(video.Extensions, strings.ToLower(path.Ext(name)))
}

// withoutVideo drops the video extensions from a library's set (libraries
// whose media is comics).
func withoutVideo(exts map[string]bool) map[string]bool {
	for _, e := range video.Extensions {
		delete(exts, e)
	}
	return exts
}

// readVideo probes the video file v into res. What ffprobe says goes to
// video_probes; a file with a picture gets a cover. A file ffprobe cannot
// read keeps its row, format video, with the error (video_unreadable,
// video_timeout).
func (r *run) readVideo(t scanning.FileTarget, v *video.File, res *fileResult, fail func(error) fileResult) fileResult {
	defer v.Close()
	a := &res.analysis
	a.Format = string(protocol.FormatVideo)
	info, err := video.Probe(r.ctx, v, video.LimitsFrom(r.vals))
	if err != nil {
		return fail(err)
	}
	a.Video = &model.VideoProbe{FileID: t.ID, Container: string(info.Container),
		DurationMS: info.Duration.Milliseconds(), Width: nullInt(info.Width), Height: nullInt(info.Height),
		VideoCodec: nullStr(info.VideoCodec), AudioCodec: nullStr(info.AudioCodec), Rotation: int64(info.Rotation)}
	a.NeedsCover = r.coverMode && info.Width > 0
	return *res
}

// openVideo opens t as a video when its name says so, or when its
// content, which no archive reader knows (archiveErr), starts like a
// video container (a .cbz that is really an MP4). ok is false when t is
// no video, or the library indexes none.
func (r *run) openVideo(t scanning.FileTarget, archiveErr error) (v *video.File, ok bool, err error) {
	switch {
	case !r.video:
		return nil, false, nil
	case archiveErr == nil:
		if !isVideoName(t.RelativePath) {
			return nil, false, nil
		}
		v, err = video.Open(r.root, t.RelativePath)
		return v, true, err
	case protocol.CodeOf(archiveErr, "") == protocol.ErrArchiveCorrupt:
		v, err = video.Open(r.root, t.RelativePath)
		return v, err == nil, err
	}
	return nil, false, nil
}
