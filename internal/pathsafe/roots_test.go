package pathsafe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSplitRoots(t *testing.T) {
	for spec, want := range map[string][]string{
		"/libraries":           {"/libraries"},
		"/a,/b":                {"/a", "/b"},
		" /a , /b ,":           {"/a", "/b"},
		",,":                   nil,
		"":                     nil,
		"/with space/x,/other": {"/with space/x", "/other"},
	} {
		if got := SplitRoots(spec); !slices.Equal(got, want) {
			t.Errorf("SplitRoots(%q) = %q, want %q", spec, got, want)
		}
	}
}

func TestRoots(t *testing.T) {
	base, lib := setup(t)
	link := filepath.Join(base, "link-to-lib2")
	if err := os.Symlink(filepath.Join(base, "library2"), link); err != nil {
		t.Fatal(err)
	}

	t.Run("bad lists are errors", func(t *testing.T) {
		for _, paths := range [][]string{
			nil,
			{filepath.Join(base, "absent")},
			{lib, filepath.Join(base, "absent")},
			{"relative"},
			{""},
			{filepath.Join(lib, "a.cbz")},
			{lib + "\x00x"},
		} {
			if r, err := OpenRoots(paths); err == nil {
				t.Errorf("OpenRoots(%q) = %q, want an error", paths, r)
			}
		}
	})

	roots, err := OpenRoots([]string{lib, link})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Roots{lib, filepath.Join(base, "library2")}); !slices.Equal(roots, want) {
		t.Fatalf("roots = %q, want the real paths %q", roots, want)
	}

	t.Run("contains", func(t *testing.T) {
		for path, want := range map[string]bool{
			lib:                              true,
			filepath.Join(lib, "sub"):        true,
			filepath.Join(base, "library2"):  true,
			filepath.Join(link):              true,
			filepath.Join(lib, "outdir"):     true, // resolves into library2, the second root
			filepath.Join(base, "lib"):       false,
			base:                             false,
			filepath.Join(lib, "rel-in.cbz"): true,
		} {
			if got, err := roots.Contains(path); err != nil || got != want {
				t.Errorf("Contains(%s) = %v, %v; want %v", path, got, err, want)
			}
		}
	})
	t.Run("a missing path is not found, not outside", func(t *testing.T) {
		if _, err := roots.Contains(filepath.Join(lib, "nope")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
		if _, err := roots.Contains(lib + "\x00"); !errors.Is(err, ErrOutside) {
			t.Fatalf("NUL: err = %v", err)
		}
	})
	t.Run("nil roots confine nothing", func(t *testing.T) {
		if ok, err := Roots(nil).Contains(base); !ok || err != nil {
			t.Fatalf("nil roots: %v %v", ok, err)
		}
	})
}
