package deploy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// watchedFile is what these tests read of a file through the API.
type watchedFile struct {
	ID            int64   `json:"id"`
	RelativePath  string  `json:"relative_path"`
	IsMissing     bool    `json:"is_missing"`
	ContentHash   *string `json:"content_hash"`
	AnalysisError *struct {
		Code string `json:"code"`
	} `json:"analysis_error"`
	Cover struct {
		Status string `json:"status"`
	} `json:"cover"`
}

type watchedLibrary struct {
	t   *testing.T
	c   apiClient
	id  int64
	dir string
}

// files lists every file of the library, page by page.
func (w *watchedLibrary) files() ([]watchedFile, error) {
	var all []watchedFile
	for cursor := ""; ; {
		var page struct {
			Items      []watchedFile `json:"items"`
			NextCursor *string       `json:"next_cursor"`
		}
		q := fmt.Sprintf("/files?library_id=%d&limit=200", w.id)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		if code, err := w.c.try("GET", q, "", &page); err != nil || code != 200 {
			return nil, fmt.Errorf("list files: %d %v", code, err)
		}
		all = append(all, page.Items...)
		if page.NextCursor == nil {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}

func (w *watchedLibrary) file(rel string) (watchedFile, bool) {
	w.t.Helper()
	files, err := w.files()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, f := range files {
		if f.RelativePath == rel {
			return f, true
		}
	}
	return watchedFile{}, false
}

// book is a real cbz of about size bytes: three pages and a stored
// padding entry of random bytes (so every book differs).
func book(t *testing.T, seed, size int) []byte {
	t.Helper()
	pad := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(seed), 39))
	for i := range pad {
		pad[i] = byte(r.Uint32())
	}
	data, err := fixtures.CBZ(fixtures.Book{Pages: 3, Page: fixtures.PageOptions{Seed: seed, W: 320, H: 480},
		Extra: []fixtures.File{{Name: "padding.bin", Data: pad}}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeSlowly writes data at path in chunks with pauses, as a slow copy
// over the network would, and returns when the last byte is written.
func writeSlowly(t *testing.T, path string, data []byte, chunk int, pause time.Duration) time.Time {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += chunk {
		if _, err := f.Write(data[off:min(off+chunk, len(data))]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// corruptionSentinel lists the library every 100 ms and records any file
// listed with an analysis error: a half-written archive analysed too soon
// would show archive_corrupt.
func corruptionSentinel(w *watchedLibrary) (stop func() []string) {
	var mu sync.Mutex
	var seen []string
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			files, err := w.files()
			if err != nil {
				continue
			}
			for _, f := range files {
				if f.AnalysisError != nil {
					mu.Lock()
					seen = append(seen, f.RelativePath+": "+f.AnalysisError.Code)
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		close(quit)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p+0.5)-1)]
}

func rssKB(pid int) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:"))
		}
	}
	return "?"
}
