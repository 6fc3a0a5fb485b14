package thumbs

import (
	"archive/zip"
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// Benchmarks (make bench). The corpus is generated once with the vips CLI
// (colour film-grain noise, blurred: ~1.2 MB per 3000×4000 JPEG at Q90,
// close to a real scan) into a cache folder under the OS temp dir, and
// reused by later runs.

const (
	benchW = 3000
	benchH = 4000
)

// corpusSize is the corpus of the run's scale: at BENCH_SCALE=small (the
// smoke run inside make test) 20 pages of 4 distinct images and 4 books
// per format; otherwise 100 pages of 10 images and 20 books per format.
func corpusSize() (pages, distinct, books int, name string) {
	if os.Getenv("BENCH_SCALE") == "small" {
		return 20, 4, 4, "bindery-thumbs-bench-v1-small"
	}
	return 100, 10, 20, "bindery-thumbs-bench-v1"
}

var benchCorpus = struct {
	once sync.Once
	dir  string
	err  error
}{}

// corpus returns the folder holding jpeg/NNN.jpg (100 pages), and the
// .cbz/.cbr/.cb7 books made of them.
func corpus(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("vips"); err != nil {
		b.Skip("vips CLI not installed")
	}
	benchCorpus.once.Do(func() {
		_, _, _, name := corpusSize()
		dir := filepath.Join(os.TempDir(), name)
		benchCorpus.dir = dir
		if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
			return
		}
		benchCorpus.err = makeCorpus(dir)
	})
	if benchCorpus.err != nil {
		b.Fatal(benchCorpus.err)
	}
	return benchCorpus.dir
}

func makeCorpus(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "jpeg"), 0o755); err != nil {
		return err
	}
	benchPages, benchDistinct, _, _ := corpusSize()
	var distinct [][]byte
	for i := range benchDistinct {
		data, err := noiseJPEG(dir, benchW, benchH, i)
		if err != nil {
			return err
		}
		distinct = append(distinct, data)
	}
	for i := range benchPages {
		if err := os.WriteFile(filepath.Join(dir, "jpeg", fmt.Sprintf("%03d.jpg", i)), distinct[i%benchDistinct], 0o644); err != nil {
			return err
		}
	}
	if err := makeBooks(dir, distinct); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644)
}

// noiseJPEG makes a w×h colour noise JPEG with the vips CLI.
func noiseJPEG(dir string, w, h, seed int) ([]byte, error) {
	tmp, err := os.MkdirTemp(dir, "gen-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	p := func(n string) string { return filepath.Join(tmp, n) }
	steps := [][]string{
		{"gaussnoise", p("r.v"), strconv.Itoa(w), strconv.Itoa(h), "--seed", strconv.Itoa(3 * seed), "--sigma", "50"},
		{"gaussnoise", p("g.v"), strconv.Itoa(w), strconv.Itoa(h), "--seed", strconv.Itoa(3*seed + 1), "--sigma", "50"},
		{"gaussnoise", p("b.v"), strconv.Itoa(w), strconv.Itoa(h), "--seed", strconv.Itoa(3*seed + 2), "--sigma", "50"},
		{"bandjoin", p("r.v") + " " + p("g.v") + " " + p("b.v"), p("rgb.v")},
		{"gaussblur", p("rgb.v"), p("blur.v"), "1.5"},
		{"cast", p("blur.v"), p("c.v"), "uchar"},
		{"copy", p("c.v"), p("out.jpg") + "[Q=90]"},
	}
	for _, s := range steps {
		if msg, err := exec.Command("vips", s...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("vips %v: %v: %s", s, err, msg)
		}
	}
	return os.ReadFile(p("out.jpg"))
}

// makeBooks writes the corpus's books of each archive format; each has the
// big cover page first and two more big pages.
func makeBooks(dir string, pages [][]byte) error {
	_, _, benchBooks, _ := corpusSize()
	if err := os.MkdirAll(filepath.Join(dir, "books"), 0o755); err != nil {
		return err
	}
	for i := range benchBooks {
		files := []fixtures.File{
			{Name: "p001.jpg", Data: pages[i%len(pages)]},
			{Name: "p002.jpg", Data: pages[(i+1)%len(pages)]},
			{Name: "p003.jpg", Data: pages[(i+2)%len(pages)]},
		}
		z, err := fixtures.Zip(files, zip.Store)
		if err != nil {
			return err
		}
		base := filepath.Join(dir, "books", fmt.Sprintf("%03d", i))
		if err := os.WriteFile(base+".cbz", z, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(base+".cbr", fixtures.RAR5(files), 0o644); err != nil {
			return err
		}
		if err := fixtures.SevenZip(base+".cb7", files, fixtures.SevenZipOptions{}); err != nil && err != fixtures.ErrNo7zz {
			return err
		}
		if err := fixtures.SevenZip(base+".solid.cb7", files, fixtures.SevenZipOptions{Solid: true}); err != nil && err != fixtures.ErrNo7zz {
			return err
		}
	}
	return nil
}

// renderPaths renders every path's cover page with `workers` goroutines
// into out, the way the Renderer does (read bounded, RenderCover, atomic
// write), and returns the mean encode attempts.
func renderPaths(b *testing.B, paths []string, out string, workers int) float64 {
	b.Helper()
	c := newCache(out, time.Hour)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	attempts := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				a, err := archive.Open(paths[i])
				if err != nil {
					b.Error(err)
					continue
				}
				page, err := a.ReadEntry(a.Pages()[0], 64<<20)
				a.Close()
				if err != nil {
					b.Error(err)
					continue
				}
				cover, err := RenderCover(page, Options{})
				if err != nil {
					b.Error(err)
					continue
				}
				dst, err := c.target(fmt.Sprintf("covers/%03d/%d.webp", i%256, i))
				if err == nil {
					err = c.write(dst, cover.Data, nil)
				}
				if err != nil {
					b.Error(err)
				}
				mu.Lock()
				attempts += cover.Attempts
				mu.Unlock()
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()
	return float64(attempts) / float64(len(paths))
}

func globSorted(b *testing.B, pattern string) []string {
	b.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		b.Skipf("no corpus files match %s", pattern)
	}
	return paths
}

// BenchmarkCoversJPEG: covers/s from 100 3000×4000 JPEG pages, Bindery's
// pipeline (1 and 2 concurrent renders, libvips 1 thread each) beside one
// vipsthumbnail process given all 100 files (default libvips threads = all
// cores), same width, format and quality.
func BenchmarkCoversJPEG(b *testing.B) {
	dir := corpus(b)
	setupVips(1)
	paths := globSorted(b, filepath.Join(dir, "jpeg", "*.jpg"))
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("bindery/workers=%d", workers), func(b *testing.B) {
			var att float64
			for b.Loop() {
				att = renderPaths(b, paths, b.TempDir(), workers)
			}
			b.ReportMetric(float64(len(paths)*b.N)/b.Elapsed().Seconds(), "covers/s")
			b.ReportMetric(att, "encodes/cover")
		})
	}
	b.Run("vipsthumbnail", func(b *testing.B) {
		bin, err := exec.LookPath("vipsthumbnail")
		if err != nil {
			b.Skip("vipsthumbnail not installed")
		}
		for b.Loop() {
			out := b.TempDir()
			args := append([]string{"-s", "320x", "-o", filepath.Join(out, "%s.webp[Q=85,strip]")}, paths...)
			if msg, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
				b.Fatalf("vipsthumbnail: %v: %s", err, msg)
			}
		}
		b.ReportMetric(float64(len(paths)*b.N)/b.Elapsed().Seconds(), "covers/s")
	})
}

// BenchmarkCoversArchive: covers/s from the first page of 20 books per
// archive format (3 stored 3000×4000 pages each; 7z also solid).
func BenchmarkCoversArchive(b *testing.B) {
	dir := corpus(b)
	setupVips(1)
	for _, kind := range []string{"cbz", "cbr", "cb7", "solid.cb7"} {
		b.Run(kind, func(b *testing.B) {
			paths := globSorted(b, filepath.Join(dir, "books", "[0-9][0-9][0-9]."+kind))
			for b.Loop() {
				renderPaths(b, paths, b.TempDir(), 2)
			}
			b.ReportMetric(float64(len(paths)*b.N)/b.Elapsed().Seconds(), "covers/s")
		})
	}
}

// BenchmarkCoverPeakRSS: peak RSS (VmHWM) of a fresh process doing 2
// concurrent renders of 6000×8000 JPEG pages, 3 rounds. The child is this
// test binary (TestPeakRSSChild) so nothing of the parent's heap counts.
func BenchmarkCoverPeakRSS(b *testing.B) {
	dir := corpus(b)
	var pages []string
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("huge-%d.jpg", i))
		if _, err := os.Stat(p); err != nil {
			data, err := noiseJPEG(dir, 6000, 8000, 100+i)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		pages = append(pages, p)
	}
	var peak float64
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSSChild$", "-test.v")
		cmd.Env = append(os.Environ(), "BINDERY_RSS_PAGES="+strings.Join(pages, string(os.PathListSeparator)))
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v: %s", err, out)
		}
		_, after, ok := strings.Cut(string(out), "VmHWM-kB=")
		if !ok {
			b.Fatalf("child printed no VmHWM: %s", out)
		}
		kb, err := strconv.ParseFloat(strings.Fields(after)[0], 64)
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, kb/1024)
	}
	b.ReportMetric(peak, "peak-RSS-MB")
}

// TestPeakRSSChild runs only as BenchmarkCoverPeakRSS's child.
func TestPeakRSSChild(t *testing.T) {
	env := os.Getenv("BINDERY_RSS_PAGES")
	if env == "" {
		t.Skip("child of BenchmarkCoverPeakRSS only")
	}
	setupVips(1)
	paths := strings.Split(env, string(os.PathListSeparator))
	for range 3 {
		var wg sync.WaitGroup
		for _, p := range paths {
			wg.Add(1)
			go func() {
				defer wg.Done()
				data, err := os.ReadFile(p)
				if err != nil {
					t.Error(err)
					return
				}
				c, err := RenderCover(data, Options{Format: protocol.ImageWebP})
				if err != nil || c.Width != 320 {
					t.Errorf("render %s: %v", p, err)
				}
			}()
		}
		wg.Wait()
		runtime.GC()
	}
	fmt.Printf("VmHWM-kB=%d\n", procStatus(t, "VmHWM:"))
}

// procStatus reads one kB figure of /proc/self/status.
func procStatus(t *testing.T, key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), key); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", key)
	return 0
}

// BenchmarkCoverRSSFlat: RSS of a fresh process after 200 and after 2,000
// renders of 1200×1800 pages with 2 concurrent renders; the growth between
// the two should be near zero (libvips cache off, no leak per render).
func BenchmarkCoverRSSFlat(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRSSFlatChild$", "-test.v")
		cmd.Env = append(os.Environ(), "BINDERY_RSS_FLAT=2000")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v: %s", err, out)
		}
		var early, late float64
		if _, err := fmt.Sscanf(after(string(out), "RSS-kB="), "%f %f", &early, &late); err != nil {
			b.Fatalf("child output %q: %v", out, err)
		}
		b.ReportMetric(early/1024, "RSS@200-MB")
		b.ReportMetric(late/1024, "RSS@2000-MB")
	}
}

func after(s, sep string) string {
	_, a, _ := strings.Cut(s, sep)
	return a
}

// TestRSSFlatChild runs only as BenchmarkCoverRSSFlat's child.
func TestRSSFlatChild(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BINDERY_RSS_FLAT"))
	if n == 0 {
		t.Skip("child of BenchmarkCoverRSSFlat only")
	}
	setupVips(1)
	var pages [][]byte
	for i := range 4 {
		pages = append(pages, mustJPEG(t, 1200, 1800, i))
	}
	var early int64
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, err := RenderCover(pages[i%len(pages)], Options{}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range n {
		if i == 200 {
			runtime.GC()
			early = vmRSS(t)
		}
		work <- i
	}
	close(work)
	wg.Wait()
	runtime.GC()
	fmt.Printf("RSS-kB=%d %d\n", early, vmRSS(t))
}

func vmRSS(t *testing.T) int64 { return procStatus(t, "VmRSS:") }
