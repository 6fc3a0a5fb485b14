package thumbs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/protocol"
)

// TestThreadsetKeepsIdleWorkers checks the workaround of threadset.go:
// on a libvips whose thread set races, the worker threads a render used
// are still there after the 15 seconds that would have made them leave
// (without it they are gone), and a render after the idle time returns.
func TestThreadsetKeepsIdleWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out libvips' 15 s idle time")
	}
	t.Parallel()
	setupVips(1)
	if !threadsetGuarded() {
		v := vipsVersion()
		if v >= 81401 && v < 81504 {
			t.Fatalf("libvips %d races, but the guard is off", v)
		}
		t.Skipf("libvips %d: its thread set does not race", v)
	}
	src := mustJPEG(t, 600, 900, 4)
	if _, err := RenderCover(src, Options{Format: protocol.ImageWebP}); err != nil {
		t.Fatal(err)
	}
	before := vipsWorkers(t)
	if len(before) == 0 {
		t.Fatal("no libvips worker thread after a render")
	}
	time.Sleep(16 * time.Second)
	after := vipsWorkers(t)
	for _, tid := range before {
		if !slices.Contains(after, tid) {
			t.Fatalf("libvips worker %s left after idling (before %v, after %v)", tid, before, after)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := RenderCover(src, Options{Format: protocol.ImageWebP})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a render after the idle time did not return")
	}
}

// vipsWorkers lists the ids of this process's libvips worker threads.
func vipsWorkers(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range tasks {
		comm, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "libvips worker" {
			ids = append(ids, task.Name())
		}
	}
	return ids
}
