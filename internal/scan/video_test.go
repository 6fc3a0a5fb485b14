package scan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// video writes a generated test video at rel.
func (e *env) video(rel string, kind fixtures.VideoKind) {
	e.t.Helper()
	p := filepath.Join(e.root, filepath.FromSlash(rel))
	for _, err := range []error{os.MkdirAll(filepath.Dir(p), 0o755), fixtures.Video(p, kind, int(kind)), os.Chtimes(p, t0, t0)} {
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestVideoFiles: video files are indexed with format video, probed into
// video_probes and queued for a cover when they have a picture; bad ones
// keep a row with a clear code; a library whose media is comics skips
// them; content decides over the extension.
func TestVideoFiles(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.video("Anime/Show 01.mp4", fixtures.VideoMP4)
	e.video("Anime/Show 02.mkv", fixtures.VideoMKV)
	e.video("Anime/Trailer.webm", fixtures.VideoWebM)
	e.video("Anime/Phone.mov", fixtures.VideoRotated)
	e.video("Anime/Soundtrack.mp4", fixtures.VideoAudioOnly)
	e.video("Anime/Broken.mp4", fixtures.VideoTruncated)
	e.video("Anime/Mislabelled.cbz", fixtures.VideoMP4) // an MP4 under a comic's name
	e.file("Anime/Empty.mkv", nil, t0)
	e.file("Anime/Notes.avi", []byte("not a video at all"), t0)
	e.file("Saga/Saga 001.cbz", cbz(t, "", pages(3)...), t0)
	for i := 1; i <= 3; i++ { // a trailer beside the pages keeps the folder a book
		page, err := fixtures.Image(fixtures.JPEG, 8, 12, i)
		must(t, err)
		e.file("Berserk/Vol 01/"+string(rune('0'+i))+".jpg", page, t0)
	}
	e.video("Berserk/Vol 01/trailer.mp4", fixtures.VideoWebM)

	c := e.scan()
	got := strings.Join(e.rows(`SELECT f.relative_path || ' ' || f.role || ' ' || COALESCE(f.format, '-') || ' ' ||
			COALESCE(f.analysis_error_code, 'ok') || ' ' || f.needs_cover || ' ' ||
			COALESCE(v.container || ' ' || (v.duration_ms / 1000) || 's ' || COALESCE(v.width || 'x' || v.height, '-') || ' ' ||
				COALESCE(v.video_codec, '-') || '/' || COALESCE(v.audio_codec, '-') || ' ' || v.rotation, 'no probe')
		FROM library_files f LEFT JOIN video_probes v ON v.file_id = f.id
		WHERE f.relative_path NOT LIKE 'Berserk/Vol 01/_.jpg' ORDER BY f.relative_path`), "\n")
	want := strings.Join([]string{
		"Anime/Broken.mp4 book video video_unreadable 0 no probe",
		"Anime/Empty.mkv book - video_unreadable 0 no probe",
		"Anime/Mislabelled.cbz book video ok 1 mp4 4s 320x240 h264/aac 0",
		"Anime/Notes.avi book - video_unreadable 0 no probe",
		"Anime/Phone.mov book video ok 1 mp4 4s 240x320 h264/aac 270",
		"Anime/Show 01.mp4 book video ok 1 mp4 4s 320x240 h264/aac 0",
		"Anime/Show 02.mkv book video ok 1 mkv 4s 320x240 h264/aac 0",
		"Anime/Soundtrack.mp4 book video ok 0 mp4 4s - -/aac 0",
		"Anime/Trailer.webm book video ok 1 webm 4s 320x240 vp9/- 0",
		"Berserk/Vol 01/ folder folder ok 1 no probe",
		"Berserk/Vol 01/trailer.mp4 book video ok 1 webm 4s 320x240 vp9/- 0",
		"Saga/Saga 001.cbz book zip ok 1 no probe",
	}, "\n")
	if got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
	if c.ErrorCount != 3 {
		t.Errorf("error count %d, want 3 (broken, empty, notes)", c.ErrorCount)
	}

	t.Run("a changed file that is no longer a video loses its probe", func(t *testing.T) {
		e.file("Anime/Show 01.mp4", []byte("overwritten"), t0.Add(1e9))
		e.scan()
		if n := e.one(`SELECT count(*) FROM video_probes v JOIN library_files f ON f.id = v.file_id
			WHERE f.relative_path = 'Anime/Show 01.mp4'`); n != "0" {
			t.Fatalf("%s probe rows left", n)
		}
	})

	t.Run("a library of comics only skips videos", func(t *testing.T) {
		media := protocol.LibraryComics
		if _, err := e.control.UpdateLibrary(context.Background(), e.lib, store.LibraryPatch{Media: &media}); err != nil {
			t.Fatal(err)
		}
		e.scan()
		got := e.rows(`SELECT relative_path FROM library_files WHERE is_missing = 0 AND format = 'video' ORDER BY relative_path`)
		// Content still decides for a file a comic extension brought in.
		if strings.Join(got, ",") != "Anime/Mislabelled.cbz" {
			t.Fatalf("present videos %v, want only the mislabelled .cbz", got)
		}
	})
}
