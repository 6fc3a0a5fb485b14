package daemons

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"image/jpeg"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// TestJPEGWithComment: the scale books' pages are valid JPEGs of the same
// picture with other bytes, and their zip entries' (size, CRC-32) pairs,
// what the pages key is made of, differ from book to book: equal pairs
// would make the books same-book candidates (a PNG text chunk, whose own
// CRC cancels most of the text, gave 56,048 pairs for 100,000 books).
func TestJPEGWithComment(t *testing.T) {
	t.Parallel()
	base, err := fixtures.Image(fixtures.JPEG, 4, 6, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, b := jpegWithComment(base, "book 1"), jpegWithComment(base, "book 2")
	if bytes.Equal(a, b) {
		t.Fatal("two books' pages are equal")
	}
	for _, p := range [][]byte{a, b} {
		img, err := jpeg.Decode(bytes.NewReader(p))
		if err != nil || img.Bounds().Dx() != 4 {
			t.Fatalf("not a 4-wide JPEG: %v", err)
		}
	}
	const n = 20_000
	seen := map[[2]uint32]bool{}
	for i := range n {
		p := jpegWithComment(base, fmt.Sprintf("book %d", i))
		seen[[2]uint32{uint32(len(p)), crc32.ChecksumIEEE(p)}] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct (size, CRC-32) pairs for %d pages", len(seen), n)
	}
}

// TestPeakRSSPerPhase: peakRSS.next returns the high-water mark of what
// ran since the previous next, not since the process started: a 64 MiB
// spike, over before its phase ends, counts in that phase and not in the
// next one.
func TestPeakRSSPerPhase(t *testing.T) {
	p := peakRSS{pid: os.Getpid()}
	p.next()
	if !p.exact {
		t.Skip("clear_refs refused: VmHWM cannot be reset here")
	}
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	runtime.KeepAlive(buf)
	buf = nil
	runtime.GC()
	debug.FreeOSMemory() // the spike is over before the phase ends
	spike := p.next()
	after := p.next()
	if !p.exact || spike < 64 || after > spike-48 {
		t.Fatalf("phase with a 64 MiB spike: %.1f MB, the phase after it: %.1f MB (exact %v)", spike, after, p.exact)
	}
}
