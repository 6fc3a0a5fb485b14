package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// videosThroughAPI scans, with both daemons running, anime episodes kept
// beside a comic: one episode copied into a second folder, a phone clip
// with rotation metadata, and a truncated download. It checks what a user
// sees: each video probed, a cover for each playable one (portrait for the
// phone clip), the copy in a duplicate group with its original, and the
// truncated file listed with video_unreadable.
func videosThroughAPI(t *testing.T, c apiClient, libraryRoot string) {
	t.Helper()
	dir := filepath.Join(libraryRoot, "anime")
	gen := func(rel string, kind fixtures.VideoKind) string {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fixtures.Video(p, kind, 1); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ep := gen("Show/Show - 01.mkv", fixtures.VideoMKV)
	gen("Phone/clip.mp4", fixtures.VideoRotated)
	gen("Downloads/Show - 02.mp4", fixtures.VideoTruncated)
	data, err := os.ReadFile(ep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "Backup"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Backup", "Show - 01.mkv"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	libID := createLibraryAt(t, c, "anime", dir)
	scan(t, c, libID)
	type file struct {
		ID            int64
		RelativePath  string `json:"relative_path"`
		Format        *string
		AnalysisError *struct{ Code string } `json:"analysis_error"`
		Cover         struct{ Status, URL string }
		Video         *struct {
			Container  string
			DurationMS int64 `json:"duration_ms"`
			Width      int64
			Height     int64
			Rotation   int64
		}
	}
	var files struct{ Items []file }
	waitFor(t, "covers of the three playable videos", 90*time.Second, func() bool {
		files.Items = nil
		c.do(t, "GET", fmt.Sprintf("/files?library_id=%d&format=video&limit=100", libID), "", &files)
		ready := 0
		for _, f := range files.Items {
			if f.Cover.Status == "ready" {
				ready++
			}
		}
		return ready == 3
	})
	byPath := map[string]file{}
	for _, f := range files.Items {
		byPath[f.RelativePath] = f
	}
	if len(byPath) != 4 {
		t.Fatalf("video files %v, want 4", files.Items)
	}
	if f := byPath["Downloads/Show - 02.mp4"]; f.AnalysisError == nil || f.AnalysisError.Code != "video_unreadable" {
		t.Fatalf("the truncated download: %+v, want video_unreadable", f)
	}
	for rel, want := range map[string]string{"Show/Show - 01.mkv": "mkv 320x240 0", "Phone/clip.mp4": "mp4 240x320 270"} {
		var d file
		c.do(t, "GET", fmt.Sprintf("/files/%d", byPath[rel].ID), "", &d)
		if d.Video == nil {
			t.Fatalf("%s has no probe", rel)
		}
		got := fmt.Sprintf("%s %dx%d %d", d.Video.Container, d.Video.Width, d.Video.Height, d.Video.Rotation)
		if got != want || d.Video.DurationMS < fixtures.VideoSeconds*1000 {
			t.Fatalf("%s probe %q (%d ms), want %q", rel, got, d.Video.DurationMS, want)
		}
		getImage(t, c.base+d.Cover.URL)
	}
	waitFor(t, "the copied episode grouped with its original", 60*time.Second, func() bool {
		var groups struct {
			Items []struct {
				GroupKey string `json:"group_key"`
			}
		}
		c.do(t, "GET", fmt.Sprintf("/duplicates/groups?library_id=%d&limit=200", libID), "", &groups)
		for _, g := range groups.Items {
			var members struct{ Items []file }
			c.do(t, "GET", "/duplicates/groups/"+g.GroupKey+"/files", "", &members)
			var paths []string
			for _, m := range members.Items {
				paths = append(paths, m.RelativePath)
			}
			if strings.Join(paths, ",") == "Backup/Show - 01.mkv,Show/Show - 01.mkv" {
				return true
			}
		}
		return false
	})
}

// composeVideos adds to dir two videos an image must read with its own
// ffmpeg (an MP4 and a phone clip with rotation metadata) and returns how
// many files it added.
func composeVideos(t *testing.T, dir string) int {
	t.Helper()
	for name, kind := range map[string]fixtures.VideoKind{"Anime/Show - 01.mp4": fixtures.VideoMP4, "Anime/clip.mov": fixtures.VideoRotated} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fixtures.Video(p, kind, 7); err != nil {
			t.Fatal(err)
		}
	}
	return 2
}
