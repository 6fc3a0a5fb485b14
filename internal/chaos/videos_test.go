package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
)

// TestOrphanCheckSeesAnFFmpegWithoutItsWorker: a process named ffmpeg
// reading a file of the harness as fd 3 whose parent is no workerd of the
// cluster is reported; once it is gone, nothing is.
func TestOrphanCheckSeesAnFFmpegWithoutItsWorker(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "bin", "ffmpeg") // comm is the executable's name
	data, err := os.ReadFile(sleep)
	must(t, err, os.MkdirAll(filepath.Dir(fake), 0o755))
	must(t, os.WriteFile(fake, data, 0o755), os.WriteFile(filepath.Join(dir, "clip.mp4"), []byte("x"), 0o644))
	in, err := os.Open(filepath.Join(dir, "clip.mp4"))
	must(t, err)
	defer in.Close()
	cmd := exec.Command(fake, "30")
	cmd.ExtraFiles = []*os.File{in}
	must(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	h := &harness{cfg: Config{Dir: dir, Log: testWriter{t}}, r: &Report{}}
	c := &cluster{workers: map[string]*daemon{}}
	deadline := time.Now().Add(5 * time.Second)
	for len(videoProcs(dir)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // until the exec has happened
	}
	h.checkOrphans(c, 50*time.Millisecond)
	if len(h.orphans) != 1 || !strings.Contains(h.orphans[0], "ffmpeg pid") {
		t.Fatalf("orphans %q, want the fake ffmpeg", h.orphans)
	}
	if chk := h.orphanCheck(); chk.OK {
		t.Fatalf("check passed with an orphan: %s", chk)
	}
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()
	h.orphans = nil
	if chk := h.orphanCheck(); !chk.OK || len(videoProcs(dir)) != 0 {
		t.Fatalf("a reaped ffmpeg is still seen: %s", chk)
	}
}

// TestVideoChecksCatchDifferences: the cover, duplicate-group and video
// checks fail on the differences they exist for, and accept a cover the
// poison-pill rule failed after MaxRecoveries worker deaths.
func TestVideoChecksCatchDifferences(t *testing.T) {
	vids := []checks.VideoFile{
		{Rel: "a.webm", Container: "webm", Picture: true, Cover: "ready"},
		{Rel: "b.webm", Container: "webm", Picture: true, Cover: "ready", DupOf: "a.webm"},
		{Rel: "s.mp4", Container: "mp4"},
		{Rel: "cut.mp4", Error: "video_unreadable"},
	}
	want := func() checks.RunState {
		return checks.RunState{
			Files: map[string]checks.FileRow{
				"a.webm":  {Path: "a.webm", Format: "video", Hash: "blake3:aa", Video: "webm|4000|320|240|vp9||0"},
				"b.webm":  {Path: "b.webm", Format: "video", Hash: "blake3:aa", Video: "webm|4000|320|240|vp9||0"},
				"s.mp4":   {Path: "s.mp4", Format: "video", Hash: "blake3:bb", Video: "mp4|4000||||aac|0"},
				"cut.mp4": {Path: "cut.mp4", Format: "video", Hash: "blake3:cc", Error: "video_unreadable"},
			},
			Covers: map[string]checks.CoverRow{
				"a.webm (webp)": {Path: "a.webm", Format: "webp", MediaType: "video", Status: "ready", Width: 320, Height: 240},
				"b.webm (webp)": {Path: "b.webm", Format: "webp", MediaType: "video", Status: "ready", Width: 320, Height: 240},
			},
			Groups:     map[string]string{"a.webm\nb.webm": "2 files, 200 bytes"},
			GroupsSeen: 1,
		}
	}
	clean := want()
	for _, chk := range []checks.Check{checks.CompareCovers(clean.Covers, clean.Covers), checks.CompareGroups(clean, clean), checks.CheckVideos(clean, vids)} {
		if !chk.OK {
			t.Fatalf("identical states: %s", chk)
		}
	}

	got := want()
	got.Covers["a.webm (webp)"] = checks.CoverRow{Path: "a.webm", Format: "webp", MediaType: "video", Status: "failed",
		Error: "render_crashed", Recovered: 3}
	if chk := checks.CompareCovers(got.Covers, clean.Covers); !chk.OK {
		t.Fatalf("a poisoned cover is not accepted: %s", chk)
	}
	if chk := checks.CheckVideos(got, vids); !chk.OK {
		t.Fatalf("a poisoned video cover is not accepted: %s", chk)
	}
	got.Covers["a.webm (webp)"] = checks.CoverRow{Path: "a.webm", Format: "webp", MediaType: "video", Status: "failed", Error: "video_unreadable"}
	if chk := checks.CompareCovers(got.Covers, clean.Covers); chk.OK {
		t.Fatalf("a cover failed for another reason passed: %s", chk)
	}
	if chk := checks.CheckVideos(got, vids); chk.OK {
		t.Fatalf("a failed video cover passed the video check: %s", chk)
	}

	got = want()
	got.Covers["s.mp4 (webp)"] = checks.CoverRow{Path: "s.mp4", Format: "webp", MediaType: "video", Status: "ready", Width: 1, Height: 1}
	if chk := checks.CompareCovers(got.Covers, clean.Covers); chk.OK || !strings.Contains(chk.Detail, "extra cover row") {
		t.Fatalf("an extra cover passed: %s", chk)
	}
	if chk := checks.CheckVideos(got, vids); chk.OK {
		t.Fatalf("a cover for an audio-only file passed: %s", chk)
	}

	got = want()
	got.Groups = map[string]string{"a.webm\nb.webm": "3 files, 300 bytes"}
	if chk := checks.CompareGroups(got, clean); chk.OK {
		t.Fatalf("a summary row counting a third file passed: %s", chk)
	}
	got = want()
	got.GroupsSeen = 2
	if chk := checks.CompareGroups(got, clean); chk.OK {
		t.Fatalf("a hash group missing from duplicate_groups passed: %s", chk)
	}
	got = want()
	got.Groups = map[string]string{}
	got.GroupsSeen = 0
	if chk := checks.CheckVideos(got, vids); chk.OK || !strings.Contains(chk.Detail, "no duplicate group") {
		t.Fatalf("copies outside a group passed: %s", chk)
	}

	got = want()
	f := got.Files["s.mp4"]
	f.Video = ""
	got.Files["s.mp4"] = f
	if chk := checks.CheckVideos(got, vids); chk.OK {
		t.Fatalf("a lost probe passed: %s", chk)
	}
	if chk := checks.CompareFiles(got.Files, clean.Files); chk.OK {
		t.Fatalf("a lost probe equals the clean run: %s", chk)
	}
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
