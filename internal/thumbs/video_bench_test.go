package thumbs

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/internal/video"
	"github.com/bindery-nas/bindery/protocol"
)

// Video cover benchmark (issue 23). One h264 MP4 is encoded with ffmpeg
// and copied into a library folder under the OS temp dir (encoding 50
// one-minute 1080p files would take half an hour on two cores), then
// reused by later runs like the page corpus.

// videoRenders is how many covers Bindery renders at once and how many
// ffmpegthumbnailer processes run at once: the JPEG bench's two concurrent
// renders, workerd's default on two cores.
const videoRenders = 2

// videoCorpusSize is the corpus of the run's scale: at BENCH_SCALE=small
// 3 files of 4 s at 320×240; otherwise 50 one-minute 1080p files at
// 25 fps with a keyframe every 10 s (-g 250, a common encoder default).
func videoCorpusSize() (files, w, h, secs int, name string) {
	if os.Getenv("BENCH_SCALE") == "small" {
		return 3, 320, 240, 4, "bindery-thumbs-video-bench-v1-small"
	}
	return 50, 1920, 1080, 60, "bindery-thumbs-video-bench-v1"
}

var benchVideos = struct {
	once sync.Once
	dir  string
	err  error
}{}

// videoCorpus returns the library folder and its NNN.mp4 files.
func videoCorpus(b *testing.B) (string, []string) {
	b.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s not installed", tool)
		}
	}
	benchVideos.once.Do(func() {
		_, _, _, _, name := videoCorpusSize()
		dir := filepath.Join(os.TempDir(), name)
		if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
			if benchVideos.err = makeVideoCorpus(dir); benchVideos.err != nil {
				return
			}
		}
		// The renderer checks the library against its roots by realpath.
		benchVideos.dir, benchVideos.err = filepath.EvalSymlinks(filepath.Join(dir, "library"))
	})
	if benchVideos.err != nil {
		b.Fatal(benchVideos.err)
	}
	return benchVideos.dir, globSorted(b, filepath.Join(benchVideos.dir, "*.mp4"))
}

func makeVideoCorpus(dir string) error {
	files, w, h, secs, _ := videoCorpusSize()
	lib := filepath.Join(dir, "library")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return err
	}
	src := filepath.Join(dir, "source.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
		"-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25:duration=%d", w, h, secs),
		"-c:v", "libx264", "-preset", "veryfast", "-g", "250", "-pix_fmt", "yuv420p", "-f", "mp4", src)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg source: %v: %s", err, msg)
	}
	for i := range files {
		if err := fixtures.CopyFile(src, filepath.Join(lib, fmt.Sprintf("%03d.mp4", i))); err != nil {
			return err
		}
	}
	if err := os.Remove(src); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644)
}

// warmVideos reads every file once, so that both sides start from the
// same page cache (this VM drains it within a minute or so).
func warmVideos(b *testing.B, paths []string) {
	b.Helper()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// probeDuration is the files' duration as a scan would store it; the
// files are copies of one, so one ffprobe run serves them all.
func probeDuration(b *testing.B, lib, path string) int64 {
	b.Helper()
	v, err := video.Open(lib, filepath.Base(path))
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	info, err := video.Probe(context.Background(), v, video.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	return info.Duration.Milliseconds()
}

// videoLane is Bindery's cover lane over a library of videos: a migrated
// database in which each file is what a scan leaves (format video, a
// video_probes row with its duration, so the renderer does not probe
// again), one queued JPEG thumbnail row each, and a Renderer.
type videoLane struct {
	r    *Renderer
	rows []model.Thumbnail
}

func newVideoLane(tb testing.TB, lib string, paths []string, durationMS int64) *videoLane {
	tb.Helper()
	ctx := context.Background()
	ctrl, work, _ := storetest.MustOpenDB(tb)
	libID := testfactory.Library(tb, ctrl, &testfactory.LibraryOpts{Name: "videos", Path: lib})
	l := &videoLane{r: NewRenderer(work, Config{StateDir: tb.TempDir(), LibraryRoots: pathsafe.Roots{lib}})}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			tb.Fatal(err)
		}
		id, err := storetest.InsertID(ctx, ctrl, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, format,
			created_at, updated_at) VALUES (?, ?, ?, ?, 'video', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`,
			libID, filepath.Base(p), st.Size(), st.ModTime().UnixNano())
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := storetest.Exec(ctx, ctrl, `INSERT INTO video_probes (file_id, container, duration_ms, video_codec, probed_at)
			VALUES (?, 'mp4', ?, 'h264', '2026-01-01 00:00:00.000')`, id, durationMS); err != nil {
			tb.Fatal(err)
		}
		// JPEG, the format ffmpegthumbnailer writes.
		th, _, err := thumbnails.New(ctrl).RegenerateThumbnail(ctx, id, protocol.ImageJPEG, 1000, 256)
		if err != nil {
			tb.Fatal(err)
		}
		if th.MediaType != protocol.MediaVideo {
			tb.Fatalf("file %d admitted as %q, want video", id, th.MediaType)
		}
		l.rows = append(l.rows, claimed(tb, ctrl, th))
	}
	return l
}

// render renders every row's cover through RenderRow with workers
// goroutines. The rows stay claimed (RenderRow leaves finishing to the
// engine), so the lane can render them again.
func (l *videoLane) render(tb testing.TB, workers int) {
	work := make(chan model.Thumbnail)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for th := range work {
				res, err := l.r.RenderRow(context.Background(), th)
				if err != nil {
					tb.Errorf("file %d: %v", th.FileID, err)
				} else if res.Width != 320 {
					tb.Errorf("file %d: cover %d px wide", th.FileID, res.Width)
				}
			}
		}()
	}
	for _, th := range l.rows {
		work <- th
	}
	close(work)
	wg.Wait()
}

// BenchmarkCoversVideo: covers/s of h264 MP4 files (one-minute 1080p at
// full scale), Bindery's renderer (video_probes duration, ffmpeg frame at
// 10%, libvips shrink and JPEG encode, atomic write) with 2 concurrent
// renders, beside `ffmpegthumbnailer -s 320 -t 10%`, one process per
// file, 2 at a time. Peak RSS: Bindery's in a fresh child process (its
// VmHWM, and its largest ffmpeg child's), ffmpegthumbnailer's per process.
// CPU per cover counts the children (ffmpeg, ffmpegthumbnailer) too.
func BenchmarkCoversVideo(b *testing.B) {
	lib, paths := videoCorpus(b)
	ms := probeDuration(b, lib, paths[0])
	b.Run(fmt.Sprintf("bindery/workers=%d", videoRenders), func(b *testing.B) {
		lane := newVideoLane(b, lib, paths, ms)
		warmVideos(b, paths)
		cpu := cpuTime(b)
		for b.Loop() {
			lane.render(b, videoRenders)
		}
		b.ReportMetric(float64(len(paths)*b.N)/b.Elapsed().Seconds(), "covers/s")
		b.ReportMetric((cpuTime(b)-cpu)/float64(len(paths)*b.N), "cpu-ms/cover")
		proc, ffmpeg := videoRSSChild(b, lib, ms)
		b.ReportMetric(proc, "peak-RSS-MB")
		b.ReportMetric(ffmpeg, "ffmpeg-peak-RSS-MB")
	})
	b.Run("ffmpegthumbnailer", func(b *testing.B) {
		bin, err := exec.LookPath("ffmpegthumbnailer")
		if err != nil {
			b.Skip("ffmpegthumbnailer not installed")
		}
		warmVideos(b, paths)
		var peakKB int64
		cpu := cpuTime(b)
		for b.Loop() {
			peakKB = max(peakKB, thumbnailAll(b, bin, paths, b.TempDir(), videoRenders))
		}
		b.ReportMetric(float64(len(paths)*b.N)/b.Elapsed().Seconds(), "covers/s")
		b.ReportMetric((cpuTime(b)-cpu)/float64(len(paths)*b.N), "cpu-ms/cover")
		b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
	})
}

// cpuTime is the CPU time, in ms, of this process and of its children
// waited for: on a shared machine it moves much less than wall time.
func cpuTime(b *testing.B) float64 {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		b.Fatal("getrusage failed")
	}
	var ms float64
	for _, tv := range []syscall.Timeval{self.Utime, self.Stime, children.Utime, children.Stime} {
		ms += float64(tv.Nano()) / 1e6
	}
	return ms
}

// thumbnailAll runs one ffmpegthumbnailer per path, procs at a time, and
// returns the largest peak RSS of them, in kB.
func thumbnailAll(b *testing.B, bin string, paths []string, out string, procs int) int64 {
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var peak int64
	for range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				dst := filepath.Join(out, fmt.Sprintf("%03d.jpg", i))
				cmd := exec.Command(bin, "-i", paths[i], "-o", dst, "-s", "320", "-t", "10%")
				if msg, err := cmd.CombinedOutput(); err != nil {
					b.Errorf("ffmpegthumbnailer %s: %v: %s", paths[i], err, msg)
					continue
				}
				if st, err := os.Stat(dst); err != nil || st.Size() == 0 {
					b.Errorf("ffmpegthumbnailer %s wrote no cover: %v", paths[i], err)
				}
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
					mu.Lock()
					peak = max(peak, ru.Maxrss)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()
	return peak
}

// videoRSSChild renders the library once in a fresh process (this test
// binary, TestVideoRSSChild), so that nothing of the parent's heap, of the
// corpus encode or of ffmpegthumbnailer counts, and returns its VmHWM and
// its largest ffmpeg child's peak RSS, in MB.
func videoRSSChild(b *testing.B, lib string, durationMS int64) (proc, ffmpeg float64) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestVideoRSSChild$", "-test.v")
	cmd.Env = append(os.Environ(), "BINDERY_VIDEO_RSS_LIB="+lib, fmt.Sprintf("BINDERY_VIDEO_RSS_MS=%d", durationMS))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v: %s", err, out)
	}
	var hwm, children float64
	if _, err := fmt.Sscanf(after(string(out), "VmHWM-kB="), "%f ffmpeg-kB=%f", &hwm, &children); err != nil {
		b.Fatalf("child output %q: %v", out, err)
	}
	return hwm / 1024, children / 1024
}

// TestVideoRSSChild runs only as BenchmarkCoversVideo's child. Its only
// children are the renderer's ffmpeg runs: the duration comes from the
// parent, as from video_probes, so no ffprobe runs here.
func TestVideoRSSChild(t *testing.T) {
	lib := os.Getenv("BINDERY_VIDEO_RSS_LIB")
	if lib == "" {
		t.Skip("child of BenchmarkCoversVideo only")
	}
	ms, err := strconv.ParseInt(os.Getenv("BINDERY_VIDEO_RSS_MS"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(lib, "*.mp4"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no videos in %s: %v", lib, err)
	}
	newVideoLane(t, lib, paths, ms).render(t, videoRenders)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("VmHWM-kB=%d ffmpeg-kB=%d\n", procStatus(t, "VmHWM:"), ru.Maxrss)
}
