package watch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/bindery-nas/bindery/protocol"
)

const kernelLimit = "/proc/sys/fs/inotify/max_user_watches"

// inotifyWatchesInUse counts the inotify watches of every process this
// test can see (fdinfo lists one "inotify wd:" line per watch).
func inotifyWatchesInUse() int {
	n := 0
	fdinfos, _ := filepath.Glob("/proc/[0-9]*/fdinfo/*")
	for _, f := range fdinfos {
		raw, err := os.ReadFile(f)
		if err == nil {
			n += strings.Count(string(raw), "inotify wd:")
		}
	}
	return n
}

// The kernel's own limit, lowered for a few seconds so that a library of 5
// folders passes the count check but the kernel refuses a watch: the
// watcher reports it and polls. The limit is machine-wide, so the test
// runs only when asked (BINDERY_TEST_LOWER_INOTIFY=1, as root) and
// restores the value.
func TestKernelWatchLimitFallsBackToPoll(t *testing.T) {
	if os.Getenv("BINDERY_TEST_LOWER_INOTIFY") == "" || os.Geteuid() != 0 {
		t.Skip("BINDERY_TEST_LOWER_INOTIFY=1 as root lowers fs.inotify.max_user_watches for a few seconds")
	}
	old, err := os.ReadFile(kernelLimit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(kernelLimit, old, 0o644); err != nil {
			t.Errorf("restore %s to %s: %v", kernelLimit, old, err)
		}
	})
	holder, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := holder.Add(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	limit := inotifyWatchesInUse() + 4 // room for 4 of the library's 5 folders
	if err := os.WriteFile(kernelLimit, []byte(strconv.Itoa(limit)), 0o644); err != nil {
		t.Skipf("cannot lower the limit here: %v", err)
	}
	e := startWatch(t, protocol.WatchAuto, 200*time.Millisecond, Config{}, "A/a.cbz", "B/b.cbz", "C/c.cbz", "D/d.cbz")
	s := e.waitActive("poll")
	if err := os.WriteFile(kernelLimit, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if !s.WatchLimitShort || !strings.Contains(s.Reason, "kernel refused") {
		t.Fatalf("status %+v", s)
	}
	t.Logf("limit lowered to %d: %+v", limit, s)
	e.write("B/new.cbz", 10)
	e.waitFolder("B/", 10*time.Second)
}
