package thumbs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRenderFolderBook: a folder book's cover is its first page in natural
// order, read through the same confined path as archives; a page swapped
// for a symlink that leads out of the library is refused.
func TestRenderFolderBook(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := filepath.Join(e.lib, "Berserk", "Vol 01")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "10.jpg"), mustJPEG(t, 400, 400, 2), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "2.jpg"), mustJPEG(t, 640, 960, 1), 0o644))
	id := e.register(t, "Berserk/Vol 01/")

	res, err := e.render(t, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Width != 320 || res.Height != 480 {
		t.Fatalf("cover %dx%d: want page 2 (640×960, first in natural order) at 320×480", res.Width, res.Height)
	}

	t.Run("escaping page", func(t *testing.T) {
		outside := filepath.Join(e.outside, "secret.jpg")
		must(t, os.WriteFile(outside, mustJPEG(t, 640, 960, 9), 0o644))
		must(t, os.Remove(filepath.Join(dir, "2.jpg")))
		must(t, os.Symlink(outside, filepath.Join(dir, "1.jpg")))
		res, err := e.render(t, id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Width != 320 || res.Height != 320 {
			t.Fatalf("cover %dx%d: want 10.jpg (the link is no page)", res.Width, res.Height)
		}
	})
}
