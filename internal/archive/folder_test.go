package archive

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/protocol"
)

func TestFolderBook(t *testing.T) {
	img := []byte("\xff\xd8\xff page")
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"10.jpg": img, "2.JPG": img, "1.png": img, ".hidden.jpg": img, "Thumbs.db": img, "notes.txt": img,
		"ComicInfo.xml": []byte("<ComicInfo><Series>Berserk</Series></ComicInfo>"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret.jpg")
	if err := os.WriteFile(outside, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "0 link.jpg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "0.jpg"), img, 0o644); err != nil {
		t.Fatal(err)
	}

	a := mustOpen(t, dir)
	t.Run("pages", func(t *testing.T) {
		if a.Format() != protocol.FormatFolder {
			t.Fatalf("format %q", a.Format())
		}
		if got := pageNames(a); !slices.Equal(got, []string{"1.png", "2.JPG", "10.jpg"}) {
			t.Fatalf("pages %q: want the images directly inside, natural order, no links, no subfolders", got)
		}
		data, err := a.ReadEntry(a.Pages()[0], 1<<20)
		if err != nil || string(data) != string(img) {
			t.Fatalf("read %q, %v", data, err)
		}
	})
	t.Run("comicinfo", func(t *testing.T) {
		data, ok, err := a.ComicInfo()
		if err != nil || !ok || len(data) == 0 {
			t.Fatalf("ComicInfo %q %v %v", data, ok, err)
		}
	})
	t.Run("page swapped for a symlink", func(t *testing.T) {
		p := filepath.Join(dir, "1.png")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, p); err != nil {
			t.Fatal(err)
		}
		_, err := a.ReadEntry(a.Pages()[0], 1<<20)
		wantCode(t, err, protocol.ErrIOError)
	})
	t.Run("unreadable folder", func(t *testing.T) {
		_, err := Open(filepath.Join(dir, "gone") + "/")
		wantCode(t, err, protocol.ErrIOError)
	})
}
