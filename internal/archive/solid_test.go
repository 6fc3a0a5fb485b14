package archive

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestSolidCursor reads the pages of solid archives through one open
// archive in orders that continue, restart and skip the kept decoder,
// and compares each with a read from a freshly opened archive.
func TestSolidCursor(t *testing.T) {
	t.Parallel()
	shared := testutil.SharedFixture(t)
	for _, rel := range []string{"komga/rar4-solid.rar", "komga/rar5-solid.rar",
		"realworld/sharpcompress/Rar5.solid.rar", "realworld/sharpcompress/Rar.multi.solid.part01.rar"} {
		path := filepath.Join(shared, rel)
		want := freshPages(t, path)
		a, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		n := len(want)
		var order []int
		for i := range n {
			order = append(order, i) // in order: one decoder
		}
		for i := n - 1; i >= 0; i-- {
			order = append(order, i) // backwards: a restart each time
		}
		for i := range n {
			order = append(order, i, 0) // forth and back to the start
		}
		for _, i := range order {
			got, err := a.ReadEntry(a.Pages()[i], 64<<20)
			if err != nil || !bytes.Equal(got, want[i]) {
				t.Fatalf("%s page %d: %d bytes, %v", rel, i+1, len(got), err)
			}
		}
		if err := a.Close(); err != nil {
			t.Errorf("%s: close: %v", rel, err)
		}
	}
}

// freshPages reads each page from its own newly opened archive.
func freshPages(t *testing.T, path string) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; ; i++ {
		a, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pages := a.Pages()
		if i == len(pages) {
			a.Close()
			return out
		}
		data, err := a.ReadEntry(pages[i], 64<<20)
		a.Close()
		if err != nil {
			t.Fatalf("%s page %d: %v", path, i+1, err)
		}
		out = append(out, data)
	}
}
