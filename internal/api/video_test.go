package api_test

import (
	"fmt"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestVideoFiles: a library's media is comics+video unless patched, and a
// video file's detail carries what ffprobe said of it.
func TestVideoFiles(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("anime")
	t.Run("media defaults to comics+video and can be patched", func(t *testing.T) {
		e.t = t
		var l struct{ Media string }
		e.call("GET", fmt.Sprintf("/api/v1/libraries/%d", lib), "").decode(t, &l)
		if l.Media != "comics+video" {
			t.Fatalf("media %q, want comics+video", l.Media)
		}
		r := e.call("PATCH", fmt.Sprintf("/api/v1/libraries/%d", lib), `{"media":"comics"}`)
		e.expect(r, 200, "")
		r.decode(t, &l)
		if l.Media != "comics" {
			t.Fatalf("patched media %q", l.Media)
		}
	})
	t.Run("a video file's detail has its probe", func(t *testing.T) {
		e.t = t
		id := e.file(lib, "Show/ep 01.mkv")
		e.exec(`UPDATE library_files SET format = 'video' WHERE id = ?`, id)
		var f struct {
			Format string
			Video  *struct {
				Container  string
				DurationMS int64  `json:"duration_ms"`
				Width      *int64 `json:"width"`
				Rotation   int64
				AudioCodec *string `json:"audio_codec"`
			}
		}
		e.call("GET", fmt.Sprintf("/api/v1/files/%d", id), "").decode(t, &f)
		if f.Format != "video" || f.Video != nil {
			t.Fatalf("unprobed video: %+v, want no video object", f)
		}
		e.exec(`INSERT INTO video_probes (file_id, container, duration_ms, width, height, video_codec, rotation, probed_at)
			VALUES (?, 'mkv', 1440000, 1920, 1080, 'hevc', 90, ?)`, id, e.now())
		e.call("GET", fmt.Sprintf("/api/v1/files/%d", id), "").decode(t, &f)
		if v := f.Video; v == nil || v.Container != "mkv" || v.DurationMS != 1440000 || v.Width == nil || *v.Width != 1920 ||
			v.Rotation != 90 || v.AudioCodec != nil {
			t.Fatalf("video %+v", v)
		}
	})
	t.Run("the database refuses a probe with a bad container or rotation", func(t *testing.T) {
		id := e.file(lib, "Show/ep 02.mkv")
		for _, q := range []string{
			`INSERT INTO video_probes (file_id, container, duration_ms, probed_at) VALUES (?, 'MKV', 1, '2026-01-01 00:00:00.000')`,
			`INSERT INTO video_probes (file_id, container, duration_ms, rotation, probed_at) VALUES (?, 'mkv', 1, 45, '2026-01-01 00:00:00.000')`,
			`INSERT INTO video_probes (file_id, container, duration_ms, probed_at) VALUES (?, 'mkv', -1, '2026-01-01 00:00:00.000')`,
		} {
			if _, err := storetest.Exec(e.ctx, e.st, q, id); err == nil {
				t.Errorf("accepted: %s", q)
			}
		}
	})
}
