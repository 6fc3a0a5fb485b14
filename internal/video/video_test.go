package video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// library holds one file of each fixture kind, generated once per run.
var library struct {
	once sync.Once
	dir  string
	err  error
}

var kindFiles = map[fixtures.VideoKind]string{
	fixtures.VideoMP4: "plain.mp4", fixtures.VideoWebM: "plain.webm", fixtures.VideoMKV: "two streams.mkv",
	fixtures.VideoRotated: "rotated.mp4", fixtures.VideoAudioOnly: "audio only.mp4",
	fixtures.VideoBlackStart: "black start.mp4", fixtures.VideoTruncated: "truncated.mp4", fixtures.VideoLong: "four hours.mp4",
}

// childEnv makes the test binary a stand-in for workerd: it runs ffmpeg
// over the file the variable names until it is killed.
const childEnv = "BINDERY_VIDEO_TEST_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		v, err := Open(filepath.Dir(path), filepath.Base(path))
		if err == nil {
			_, err = run(context.Background(), Limits{Timeout: time.Hour}.withDefaults(), "ffmpeg",
				[]string{"-nostdin", "-v", "error", "-re", "-f", "mov", "-i", inputURL, "-f", "null", "-"}, v.f, 1024)
		}
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	code := m.Run()
	if library.dir != "" {
		os.RemoveAll(library.dir)
	}
	os.Exit(code)
}

// setup returns the fixture library's root.
func setup(t *testing.T) string {
	t.Helper()
	library.once.Do(func() {
		library.dir, library.err = os.MkdirTemp("", "bindery-video-")
		for kind, name := range kindFiles {
			if library.err == nil {
				library.err = fixtures.Video(filepath.Join(library.dir, name), kind, int(kind))
			}
		}
	})
	if library.err != nil {
		t.Fatal(library.err)
	}
	return library.dir
}

func mustOpen(t *testing.T, root, rel string) *File {
	t.Helper()
	v, err := Open(root, rel)
	if err != nil {
		t.Fatalf("open %s: %v", rel, err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := protocol.CodeOf(err, "none"); got != code {
		t.Fatalf("error %v: code %s, want %s", err, got, code)
	}
}

func TestProbe(t *testing.T) {
	root := setup(t)
	ctx := context.Background()
	four := fixtures.VideoSeconds * time.Second
	for _, tc := range []struct {
		name string
		want Info
	}{
		{"plain.mp4", Info{Container: ContainerMP4, Duration: four, Width: 320, Height: 240, VideoCodec: "h264", AudioCodec: "aac"}},
		{"plain.webm", Info{Container: ContainerWebM, Duration: four, Width: 320, Height: 240, VideoCodec: "vp9"}},
		{"two streams.mkv", Info{Container: ContainerMatroska, Duration: four, Width: 320, Height: 240, VideoCodec: "h264", AudioCodec: "aac"}},
		{"rotated.mp4", Info{Container: ContainerMP4, Duration: four, Width: 240, Height: 320, VideoCodec: "h264", AudioCodec: "aac", Rotation: 270}},
		{"audio only.mp4", Info{Container: ContainerMP4, Duration: four, AudioCodec: "aac"}},
		{"four hours.mp4", Info{Container: ContainerMP4, Duration: fixtures.LongVideoSeconds * time.Second, Width: 32, Height: 32, VideoCodec: "h264"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Probe(ctx, mustOpen(t, root, tc.name), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			// Muxers pad the duration by a frame or an audio packet.
			if d := got.Duration - tc.want.Duration; d < 0 || d > 100*time.Millisecond {
				t.Errorf("duration %s, want %s", got.Duration, tc.want.Duration)
			}
			got.Duration = tc.want.Duration
			if got != tc.want {
				t.Errorf("probe %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("a truncated file is video_unreadable", func(t *testing.T) {
		_, err := Probe(ctx, mustOpen(t, root, "truncated.mp4"), Limits{})
		wantCode(t, err, protocol.ErrVideoUnreadable)
	})
}

func TestFrame(t *testing.T) {
	root := setup(t)
	ctx := context.Background()
	size := func(t *testing.T, data []byte) (int, int) {
		t.Helper()
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("frame is no JPEG: %v", err)
		}
		return cfg.Width, cfg.Height
	}
	t.Run("a frame at 10% of each kind", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			w, h int
		}{{"plain.mp4", 320, 240}, {"plain.webm", 320, 240}, {"two streams.mkv", 320, 240},
			{"rotated.mp4", 240, 320}, {"four hours.mp4", 32, 32}} {
			name, w, h := tc.name, tc.w, tc.h
			v := mustOpen(t, root, name)
			info, err := Probe(ctx, v, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			data, err := Frame(ctx, v, At(info.Duration, CoverPoints[0]), Limits{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if gw, gh := size(t, data); gw != w || gh != h {
				t.Errorf("%s: frame %d×%d, want %d×%d (rotation applied)", name, gw, gh, w, h)
			}
		}
	})
	t.Run("FrameWithin shrinks to the width, rotation applied, never enlarges", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			max, w, h int
		}{{"plain.mp4", 160, 160, 120}, {"rotated.mp4", 120, 120, 160}, {"plain.mp4", 640, 320, 240}} {
			data, err := FrameWithin(ctx, mustOpen(t, root, tc.name), time.Second, tc.max, Limits{})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if gw, gh := size(t, data); gw != tc.w || gh != tc.h {
				t.Errorf("%s within %d: frame %d×%d, want %d×%d", tc.name, tc.max, gw, gh, tc.w, tc.h)
			}
		}
	})
	t.Run("audio only has no frame", func(t *testing.T) {
		_, err := Frame(ctx, mustOpen(t, root, "audio only.mp4"), time.Second, Limits{})
		wantCode(t, err, protocol.ErrVideoUnreadable)
	})
	t.Run("past the end has no frame", func(t *testing.T) {
		_, err := Frame(ctx, mustOpen(t, root, "plain.mp4"), time.Hour, Limits{})
		wantCode(t, err, protocol.ErrVideoUnreadable)
	})
}

func TestOpenRefuses(t *testing.T) {
	root := setup(t)
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("empty.mp4", nil)
	write("text.mkv", []byte("this is not a video, only its name says so\n"))
	write("image.mp4", append([]byte{0, 0, 0, 0x1c}, []byte("ftypavif\x00\x00\x00\x00avifmif1miaf")...))
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.mp4"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "plain.mp4"), filepath.Join(dir, "escape.mp4")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.mp4"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]string{
		"empty.mp4": protocol.ErrVideoUnreadable, "text.mkv": protocol.ErrVideoUnreadable,
		"image.mp4": protocol.ErrVideoUnreadable, "pipe.mp4": protocol.ErrVideoUnreadable,
		"folder.mp4": protocol.ErrVideoUnreadable, "escape.mp4": protocol.ErrPathViolation,
		"../outside.mp4": protocol.ErrPathViolation, "gone.mp4": protocol.ErrSourceMissing,
	} {
		t.Run(name, func(t *testing.T) {
			v, err := Open(dir, name)
			if err == nil {
				v.Close()
			}
			wantCode(t, err, code)
		})
	}
}

func TestLimits(t *testing.T) {
	root := setup(t)
	ctx := context.Background()
	t.Run("a run past its timeout is video_timeout", func(t *testing.T) {
		v := mustOpen(t, root, "four hours.mp4")
		start := time.Now()
		// Decoding all four hours takes far longer than 200 ms.
		_, err := run(ctx, Limits{Timeout: 200 * time.Millisecond}.withDefaults(), "ffmpeg",
			[]string{"-nostdin", "-v", "error", "-f", "mov", "-i", inputURL, "-f", "null", "-"}, v.f, 1024)
		wantCode(t, err, protocol.ErrVideoTimeout)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("timed-out run returned after %s", d)
		}
	})
	t.Run("a cancelled run returns the context's error", func(t *testing.T) {
		v := mustOpen(t, root, "four hours.mp4")
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := run(cctx, Limits{}.withDefaults(), "ffmpeg",
			[]string{"-nostdin", "-v", "error", "-f", "mov", "-i", inputURL, "-f", "null", "-"}, v.f, 1024)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's deadline", err)
		}
	})
	t.Run("a missing ffprobe is video_unreadable naming the package", func(t *testing.T) {
		_, err := Probe(ctx, mustOpen(t, root, "plain.mp4"), Limits{FFprobe: "bindery-no-such-ffprobe"})
		wantCode(t, err, protocol.ErrVideoUnreadable)
	})
	t.Run("the memory limit applies to the child", func(t *testing.T) {
		v := mustOpen(t, root, "plain.mp4")
		_, err := Probe(ctx, v, Limits{MemoryBytes: 8 << 20})
		wantCode(t, err, protocol.ErrVideoUnreadable)
		if _, err := Probe(ctx, v, Limits{}); err != nil {
			t.Fatalf("same probe under the default limit: %v", err)
		}
	})
}

// TestNoOrphanWhenWorkerDies kills the process running ffmpeg with
// SIGKILL, as the OOM killer or an operator would kill workerd: ffmpeg
// must die with it (Pdeathsig), not decode on as an orphan.
func TestNoOrphanWhenWorkerDies(t *testing.T) {
	root := setup(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+filepath.Join(root, "four hours.mp4"))
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	var ffmpeg int
	testutil.WaitFor(t, "ffmpeg started by the child", 10*time.Second, func() bool {
		ffmpeg = childOf(child.Process.Pid, "ffmpeg")
		return ffmpeg != 0
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	testutil.WaitFor(t, fmt.Sprintf("ffmpeg %d to die with its parent", ffmpeg), 5*time.Second, func() bool {
		return !alive(ffmpeg)
	})
}

// childOf finds a child process of parent by command name in /proc.
func childOf(parent int, comm string) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		var pid, ppid int
		var name, state string
		if _, err := fmt.Sscanf(string(data), "%d %s %s %d", &pid, &name, &state, &ppid); err == nil &&
			ppid == parent && name == "("+comm+")" {
			return pid
		}
	}
	return 0
}

// alive: the process exists and is no zombie (a container's init may be
// slow to reap the orphan; a zombie runs nothing).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	var p int
	var name, state string
	_, _ = fmt.Sscanf(string(data), "%d %s %s", &p, &name, &state)
	return state != "Z"
}
