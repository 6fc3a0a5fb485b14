package api_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// BenchmarkPagesSequential reads a 200-page book page after page through
// the handler, beside `bsdtar -xOf book entry > /dev/null` for the same
// entries, as a cbz (stored), a RAR5 (stored) and a solid 7z (LZMA2), and
// reports both latencies' p50/p99 and, for the solid 7z, the last page's
// latency over the first's. Each iteration reads the whole book.
// Run: go test -run XXX -bench PagesSequential -benchtime 3x ./internal/api/
func BenchmarkPagesSequential(b *testing.B) {
	if _, err := exec.LookPath("bsdtar"); err != nil {
		b.Skip("bsdtar not installed")
	}
	e := setup(b)
	lib := e.library("comics")
	dir := filepath.Join(e.root, "comics")
	book := fixtures.Book{Pages: 200, Page: fixtures.PageOptions{W: 1000, H: 1500, NameFormat: "page %03d"}}
	for _, k := range []fixtures.Kind{fixtures.KindCBZ, fixtures.KindCBR5, fixtures.KindCB7} {
		name := "book-" + string(k) + k.Ext()
		if err := fixtures.WriteBook(filepath.Join(dir, name), k, book); err != nil {
			b.Fatal(err)
		}
		id := e.book(lib, dir, name, protocol.RoleBook)
		l := e.pagesOf(id)
		b.Run(string(k), func(b *testing.B) {
			var served, tool []time.Duration
			var first, last time.Duration
			for range b.N {
				for n := 1; n <= l.Count; n++ {
					req := httptest.NewRequest("GET", fmt.Sprintf("/api/v1/files/%d/pages/%d", id, n), nil)
					req.Header.Set("Authorization", "Bearer "+testToken)
					rec := httptest.NewRecorder()
					start := time.Now()
					e.srv.Handler().ServeHTTP(rec, req)
					d := time.Since(start)
					if rec.Code != 200 {
						b.Fatalf("page %d: %d", n, rec.Code)
					}
					served = append(served, d)
					if n == 1 {
						first = d
					}
					last = d
					start = time.Now()
					if err := exec.Command("bsdtar", "-xOf", filepath.Join(dir, name), "--", l.Items[n-1].Name).Run(); err != nil {
						b.Fatal(err)
					}
					tool = append(tool, time.Since(start))
				}
			}
			b.StopTimer()
			report(b, served, "served")
			report(b, tool, "bsdtar")
			b.ReportMetric(float64(last)/float64(first), "last/first")
		})
	}
}

func report(b *testing.B, lat []time.Duration, what string) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, what+"-p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, what+"-p99-ms")
}

// BenchmarkConcurrentReaders has 50 readers, each on its own 40-page cbz,
// ask for a page every 100 ms (10 pages/s each) for 5 s, and reports the
// p50/p99 latency of a page and the peak resident set (VmHWM) of the
// process serving them. Each iteration is one such run. The server runs
// in this process, not as a controld of its own: the peak is reset once
// the books are written, so it counts the server and the 50 clients
// under load (the clients' share included), an upper bound on what
// controld would hold.
// Run: go test -run XXX -bench ConcurrentReaders -benchtime 1x ./internal/api/
func BenchmarkConcurrentReaders(b *testing.B) {
	e := setup(b)
	lib := e.library("comics")
	dir := filepath.Join(e.root, "comics")
	const readers, pages, reads = 50, 40, 50
	book := fixtures.Book{Pages: pages, Page: fixtures.PageOptions{W: 1000, H: 1500}}
	if err := fixtures.WriteBook(filepath.Join(dir, "book-0.cbz"), fixtures.KindCBZ, book); err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, readers)
	for i := range readers {
		name := fmt.Sprintf("book-%d.cbz", i)
		if i > 0 {
			if err := fixtures.CopyFile(filepath.Join(dir, "book-0.cbz"), filepath.Join(dir, name)); err != nil {
				b.Fatal(err)
			}
		}
		ids[i] = e.book(lib, dir, name, protocol.RoleBook)
	}
	resetPeakRSS()
	for range b.N {
		lat := make(chan time.Duration, readers*reads)
		var wg sync.WaitGroup
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for n := 1; n <= reads; n++ {
					<-tick.C
					req := httptest.NewRequest("GET", fmt.Sprintf("/api/v1/files/%d/pages/%d", ids[r], (n-1)%pages+1), nil)
					req.Header.Set("Authorization", "Bearer "+testToken)
					rec := httptest.NewRecorder()
					start := time.Now()
					e.srv.Handler().ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Errorf("reader %d page %d: %d", r, n, rec.Code)
						return
					}
					lat <- time.Since(start)
				}
			}()
		}
		wg.Wait()
		close(lat)
		var all []time.Duration
		for d := range lat {
			all = append(all, d)
		}
		report(b, all, "page")
	}
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
}

// resetPeakRSS hands the heap's free pages back to the system and resets
// the process's VmHWM to its current RSS (Linux's clear_refs), so that
// peakRSSMB measures what ran after it.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB is the process's peak resident set (VmHWM) in MB, 0 where
// /proc does not say.
func peakRSSMB() float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
