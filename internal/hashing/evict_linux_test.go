package hashing

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// evictFiles drops files from the page cache, so the next reader meets a
// cold disk. Dirty pages cannot be dropped, hence the sync first.
func evictFiles(b *testing.B, files []string) {
	unix.Sync()
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		if err != nil {
			b.Fatalf("evict %s: %v", p, err)
		}
	}
}
