package checks

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// VideoFile is one video of the chaos library and what indexing it must
// give, whatever happened on the way (checkVideos).
type VideoFile struct {
	Rel string
	// Container is the probe's container; "" when there must be no probe.
	Container string
	// Picture: the probe finds a video stream (an audio-only file has
	// none); Rotated: its display rotation is not 0.
	Picture, Rotated bool
	// Error is the file's analysis_error_code ("" for none).
	Error string
	// Cover is "" when the file must get no cover row, "ready", or the
	// error code its cover rows must fail with.
	Cover string
	// DupOf is the video this one is an exact copy of.
	DupOf string
}

// DefaultVideos is the smoke library's video count: the base set below.
const DefaultVideos = 6

// videoSource is a generated video the library's files are made from.
type videoSource struct {
	kind      fixtures.VideoKind
	container string // the probe's container, and the remuxer's format
	format    string // ffmpeg's muxer for a remux
	ext       string
}

var (
	srcMP4     = videoSource{fixtures.VideoMP4, "mp4", "mp4", ".mp4"}
	srcWebM    = videoSource{fixtures.VideoWebM, "webm", "webm", ".webm"}
	srcRotated = videoSource{fixtures.VideoRotated, "mp4", "mp4", ".mov"}
	srcAudio   = videoSource{fixtures.VideoAudioOnly, "mp4", "mp4", ".mp4"}
	srcMKV     = videoSource{fixtures.VideoMKV, "mkv", "matroska", ".mkv"}
	srcBlack   = videoSource{fixtures.VideoBlackStart, "mp4", "mp4", ".mp4"}
)

// WriteVideos adds n videos under lib/Anime (n <= 0: none), generating
// each kind once with ffmpeg into scratch (in parallel) and deriving the
// rest by copying, cutting or remuxing (a new title tag: new content, same
// picture). The first six are the base set, one of each outcome: a WebM
// and its exact copy (a duplicate group), a rotated H.264 MOV, an
// audio-only MP4 (no cover), an MP4 cut before its index (unreadable: no
// probe, no cover) and one with its index first but its frames cut off
// (probed; its cover fails video_unreadable). Past six: a plain MP4, an
// MKV, a black-start MP4, then remuxed episodes, every fifth an exact copy
// of the one before. "Anime" sorts before the comics' folders, so the scan
// finds and probes the videos first and their covers are among the first
// queued: the faults' kills can land on ffprobe and ffmpeg runs.
func WriteVideos(lib, scratch string, n, seed int) ([]VideoFile, error) {
	if n <= 0 {
		return nil, nil
	}
	srcs := []videoSource{srcMP4, srcWebM, srcAudio}
	if n > DefaultVideos {
		srcs = append(srcs, srcMKV, srcBlack)
	}
	paths, err := generateSources(scratch, srcs, seed)
	if err != nil {
		return nil, err
	}
	mp4, webm := paths[srcMP4], paths[srcWebM]
	// VideoRotated is VideoMP4 remuxed with a rotate tag: remuxing the MP4
	// at hand saves encoding it again.
	paths[srcRotated] = filepath.Join(scratch, "rotated.mov")
	if err := ffmpegRemux(mp4, paths[srcRotated], "mp4", "-metadata:s:v:0", "rotate=90"); err != nil {
		return nil, err
	}
	w := &videoWriter{lib: lib, scratch: scratch, n: n, mtime: time.Date(2023, 6, 1, 12, 0, 0, 0, time.UTC)}
	w.copy("Anime/Trailers/Trailer.webm", webm, VideoFile{Container: "webm", Picture: true, Cover: "ready"})
	w.copy("Anime/Trailers/Trailer (copy).webm", webm, VideoFile{Container: "webm", Picture: true, Cover: "ready",
		DupOf: "Anime/Trailers/Trailer.webm"})
	w.copy("Anime/Phone/Clip.mov", paths[srcRotated], VideoFile{Container: "mp4", Picture: true, Rotated: true, Cover: "ready"})
	w.copy("Anime/Music/Soundtrack.mp4", paths[srcAudio], VideoFile{Container: "mp4"})
	w.cut("Anime/Broken/Show 02.mp4", mp4, false, VideoFile{Error: "video_unreadable"})
	w.cut("Anime/Broken/Show 03.mp4", mp4, true, VideoFile{Container: "mp4", Picture: true, Cover: "video_unreadable"})
	if n > DefaultVideos {
		w.copy("Anime/Show/Show 01.mp4", mp4, VideoFile{Container: "mp4", Picture: true, Cover: "ready"})
		w.copy("Anime/Show/Show 04.mkv", paths[srcMKV], VideoFile{Container: "mkv", Picture: true, Cover: "ready"})
		w.copy("Anime/Show/Show 05.mp4", paths[srcBlack], VideoFile{Container: "mp4", Picture: true, Cover: "ready"})
	}
	playable := []videoSource{srcMP4, srcWebM, srcMKV, srcBlack, srcRotated}
	for i, k := 1, 0; len(w.out) < n && w.err == nil; i++ {
		rel := fmt.Sprintf("Anime/Season %02d/Episode %02d", (i-1)/10+1, i)
		prev := w.out[len(w.out)-1]
		if i%5 == 0 {
			w.copy(rel+filepath.Ext(prev.Rel), filepath.Join(lib, filepath.FromSlash(prev.Rel)),
				VideoFile{Container: prev.Container, Picture: true, Rotated: prev.Rotated, Cover: "ready", DupOf: prev.Rel})
			continue
		}
		s := playable[k%len(playable)]
		k++
		w.remux(rel+s.ext, paths[s], s.format, fmt.Sprintf("episode %d", i),
			VideoFile{Container: s.container, Picture: true, Rotated: s == srcRotated, Cover: "ready"})
	}
	return w.out, w.err
}

// generateSources writes one video of each source with fixtures.Video.
func generateSources(dir string, srcs []videoSource, seed int) (map[videoSource]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := map[videoSource]string{}
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		p := filepath.Join(dir, fmt.Sprintf("source-%d%s", i, s.ext))
		out[s] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fixtures.Video(p, s.kind, seed+i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// videoWriter places the library's videos; the first error sticks.
type videoWriter struct {
	lib, scratch string
	n            int
	mtime        time.Time
	out          []VideoFile
	err          error
}

// add writes data at rel with the next mtime (each file its own, so that
// a copy is younger than its original).
func (w *videoWriter) add(rel string, data []byte, v VideoFile) {
	if w.err != nil || len(w.out) >= w.n {
		return
	}
	p := filepath.Join(w.lib, filepath.FromSlash(rel))
	w.mtime = w.mtime.Add(time.Hour)
	for _, err := range []error{os.MkdirAll(filepath.Dir(p), 0o755), os.WriteFile(p, data, 0o644), os.Chtimes(p, w.mtime, w.mtime)} {
		if err != nil {
			w.err = err
			return
		}
	}
	v.Rel = rel
	w.out = append(w.out, v)
}

func (w *videoWriter) copy(rel, src string, v VideoFile) {
	if w.err != nil {
		return
	}
	data, err := os.ReadFile(src)
	if err != nil {
		w.err = err
		return
	}
	w.add(rel, data, v)
}

// cut writes an MP4 cut short. Without indexFirst it keeps the first
// quarter: the index (moov), which ffmpeg writes last, is gone, and no
// probe can read the file. With indexFirst it remuxes the file with the
// index first (faststart) and keeps the index and 4 KiB of frames: the
// probe reads the index, no frame decodes.
func (w *videoWriter) cut(rel, src string, indexFirst bool, v VideoFile) {
	if w.err != nil {
		return
	}
	if !indexFirst {
		data, err := os.ReadFile(src)
		if err != nil {
			w.err = err
			return
		}
		w.add(rel, data[:len(data)/4], v)
		return
	}
	tmp := filepath.Join(w.scratch, "faststart.mp4")
	if w.err = ffmpegRemux(src, tmp, "mp4", "-movflags", "+faststart"); w.err != nil {
		return
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		w.err = err
		return
	}
	mdat := mp4Box(data, "mdat")
	if mdat < 0 {
		w.err = fmt.Errorf("no mdat box in %s", tmp)
		return
	}
	w.add(rel, data[:min(len(data), mdat+4096)], v)
}

// remux copies src's streams into a new file of format with a title tag:
// the same picture, other bytes.
func (w *videoWriter) remux(rel, src, format, title string, v VideoFile) {
	if w.err != nil || len(w.out) >= w.n {
		return
	}
	tmp := filepath.Join(w.scratch, "remux"+filepath.Ext(rel))
	if w.err = ffmpegRemux(src, tmp, format, "-metadata", "title="+title); w.err != nil {
		return
	}
	w.copy(rel, tmp, v)
}

func ffmpegRemux(src, dst, format string, extra ...string) error {
	args := append([]string{"-nostdin", "-v", "error", "-y", "-i", src, "-map", "0", "-c", "copy"}, extra...)
	out, err := exec.Command("ffmpeg", append(args, "-f", format, dst)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ffmpeg remux %s: %w: %s", filepath.Base(src), err, out)
	}
	return nil
}

// mp4Box is the offset of the first top-level box of type typ, or -1.
func mp4Box(data []byte, typ string) int {
	for off := 0; off+8 <= len(data); {
		size := int(binary.BigEndian.Uint32(data[off:]))
		if bytes.Equal(data[off+4:off+8], []byte(typ)) {
			return off
		}
		if size < 8 {
			return -1 // 64-bit or to-the-end sizes: not in files this small
		}
		off += size
	}
	return -1
}
