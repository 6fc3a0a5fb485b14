package thumbs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// putVideo generates a test video at rel and registers it as format video.
func (e *env) putVideo(t *testing.T, rel string, kind fixtures.VideoKind) int64 {
	t.Helper()
	p := filepath.Join(e.lib, rel)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, fixtures.Video(p, kind, int(kind)))
	id := e.register(t, rel)
	if _, err := storetest.Exec(context.Background(), e.ctrl, `UPDATE library_files SET format = 'video' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func mean(d decoded) float64 {
	var sum int
	for _, b := range d.Pix {
		sum += int(b)
	}
	return float64(sum) / float64(len(d.Pix))
}

// TestRenderVideo: a video's cover is a frame ffmpeg decodes, shrunk and
// encoded by the comics' pipeline; bad videos fail with a clear code.
func TestRenderVideo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cover := func(t *testing.T, id int64) (Result, decoded) {
		t.Helper()
		th := e.claim(t, id, protocol.ImageWebP)
		if th.MediaType != protocol.MediaVideo {
			t.Fatalf("admitted media_type %q, want video", th.MediaType)
		}
		res, err := e.r.RenderRow(context.Background(), th)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath)))
		if err != nil {
			t.Fatal(err)
		}
		if kind(data) != "webp" {
			t.Fatalf("cover is %s, want webp", kind(data))
		}
		return res, mustDecode(t, data)
	}
	t.Run("mp4, webm and mkv get a frame at the cover width", func(t *testing.T) {
		for _, name := range []string{"Show/ep 01.mp4", "Show/ep 02.webm", "Show/ep 03.mkv"} {
			kind := map[string]fixtures.VideoKind{".mp4": fixtures.VideoMP4, ".webm": fixtures.VideoWebM, ".mkv": fixtures.VideoMKV}[filepath.Ext(name)]
			res, d := cover(t, e.putVideo(t, name, kind))
			if res.Width != 320 || res.Height != 240 || d.W != 320 || d.H != 240 {
				t.Errorf("%s: cover %d×%d, want 320×240", name, d.W, d.H)
			}
			if m := mean(d); m < blackMean {
				t.Errorf("%s: cover mean %.1f, black", name, m)
			}
		}
	})
	t.Run("rotation metadata turns the cover", func(t *testing.T) {
		_, d := cover(t, e.putVideo(t, "Show/phone.mp4", fixtures.VideoRotated))
		if d.W != 240 || d.H != 320 {
			t.Fatalf("cover %d×%d, want portrait 240×320", d.W, d.H)
		}
	})
	t.Run("a black frame at 10% is skipped", func(t *testing.T) {
		_, d := cover(t, e.putVideo(t, "Show/fade in.mp4", fixtures.VideoBlackStart))
		if m := mean(d); m < 2*blackMean {
			t.Fatalf("cover mean brightness %.1f: the black opening was kept", m)
		}
	})
	for _, tc := range []struct {
		name string
		kind fixtures.VideoKind
	}{{"audio only.mp4", fixtures.VideoAudioOnly}, {"truncated.mp4", fixtures.VideoTruncated}} {
		t.Run(tc.name+" is video_unreadable", func(t *testing.T) {
			_, err := e.r.RenderRow(context.Background(), e.claim(t, e.putVideo(t, "Bad/"+tc.name, tc.kind), protocol.ImageWebP))
			if got := protocol.CodeOf(err, ""); got != protocol.ErrVideoUnreadable {
				t.Fatalf("got %v, want video_unreadable", err)
			}
		})
	}
	t.Run("a link out of the library is a path_violation", func(t *testing.T) {
		outside := filepath.Join(e.outside, "secret.mp4")
		must(t, fixtures.Video(outside, fixtures.VideoMP4, 9))
		must(t, os.Symlink(outside, filepath.Join(e.lib, "Show", "link.mp4")))
		id := e.register(t, "Show/link.mp4")
		if _, err := storetest.Exec(context.Background(), e.ctrl, `UPDATE library_files SET format = 'video' WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
		_, err := e.r.RenderRow(context.Background(), e.claim(t, id, protocol.ImageWebP))
		if got := protocol.CodeOf(err, ""); got != protocol.ErrPathViolation {
			t.Fatalf("got %v, want path_violation", err)
		}
	})
}
