package pathsafe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// setup builds base/library (with a book, a sub folder, a "~" folder and
// symlinks in and out) and base/lib and base/library2 as prefix traps.
func setup(t *testing.T) (base, lib string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lib = filepath.Join(base, "library")
	for _, d := range []string{"library/sub", "library/~", "lib", "library2"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"library/a.cbz", "library/sub/b.cbz", "library/~/c.cbz", "lib/secret", "library2/secret"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(base, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"library/in.cbz":     filepath.Join(lib, "sub", "b.cbz"),
		"library/rel-in.cbz": "sub/b.cbz",
		"library/out.cbz":    filepath.Join(base, "lib", "secret"),
		"library/rel-out":    "../library2/secret",
		"library/outdir":     filepath.Join(base, "library2"),
		"library/dangling":   filepath.Join(lib, "nope"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	return base, lib
}

func TestResolve(t *testing.T) {
	base, lib := setup(t)
	ok := map[string]string{
		"a.cbz":            filepath.Join(lib, "a.cbz"),
		"sub/b.cbz":        filepath.Join(lib, "sub", "b.cbz"),
		"sub/../a.cbz":     filepath.Join(lib, "a.cbz"),
		"./a.cbz":          filepath.Join(lib, "a.cbz"),
		"~/c.cbz":          filepath.Join(lib, "~", "c.cbz"),
		"in.cbz":           filepath.Join(lib, "sub", "b.cbz"),
		"rel-in.cbz":       filepath.Join(lib, "sub", "b.cbz"),
		"sub":              filepath.Join(lib, "sub"),
		"sub/../sub/b.cbz": filepath.Join(lib, "sub", "b.cbz"),
	}
	for rel, want := range ok {
		t.Run("ok "+rel, func(t *testing.T) {
			got, err := Resolve(lib, rel)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", rel, err)
			}
			if got != want {
				t.Fatalf("Resolve(%q) = %q, want %q", rel, got, want)
			}
		})
	}
	outside := []string{
		"../lib/secret", "..", "../library2/secret", "sub/../../lib/secret",
		"/etc/passwd", filepath.Join(base, "lib", "secret"), "out.cbz", "rel-out",
		"outdir/secret", "a.cbz\x00", "",
	}
	for _, rel := range outside {
		t.Run("refuse "+rel, func(t *testing.T) {
			got, err := Resolve(lib, rel)
			if !errors.Is(err, ErrOutside) {
				t.Fatalf("Resolve(%q) = %q, %v; want ErrOutside", rel, got, err)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		for _, rel := range []string{"nope.cbz", "dangling"} {
			if _, err := Resolve(lib, rel); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Resolve(%q): %v, want not exist", rel, err)
			}
		}
	})
	t.Run("root through symlink", func(t *testing.T) {
		alias := filepath.Join(base, "alias")
		if err := os.Symlink(lib, alias); err != nil {
			t.Fatal(err)
		}
		got, err := Resolve(alias, "a.cbz")
		if err != nil || got != filepath.Join(lib, "a.cbz") {
			t.Fatalf("Resolve via alias = %q, %v", got, err)
		}
		if _, err := Resolve(alias, "out.cbz"); !errors.Is(err, ErrOutside) {
			t.Fatalf("escape via alias root: %v", err)
		}
	})
}

func TestWithin(t *testing.T) {
	base, lib := setup(t)
	cases := []struct {
		path string
		want bool
	}{
		{lib, true},
		{filepath.Join(lib, "a.cbz"), true},
		{filepath.Join(lib, "sub"), true},
		{filepath.Join(lib, "in.cbz"), true},
		{filepath.Join(base, "lib", "secret"), false},
		{filepath.Join(base, "library2", "secret"), false},
		{filepath.Join(lib, "out.cbz"), false},
		{filepath.Join(lib, "..", "lib"), false},
		{base, false},
	}
	for _, c := range cases {
		got, err := Within(lib, c.path)
		if err != nil {
			t.Fatalf("Within(%q): %v", c.path, err)
		}
		if got != c.want {
			t.Errorf("Within(%q) = %v, want %v", c.path, got, c.want)
		}
	}
	// The prefix trap from the other side: /lib must not contain /library.
	if got, err := Within(filepath.Join(base, "lib"), lib); err != nil || got {
		t.Fatalf("Within(lib, library) = %v, %v", got, err)
	}
	if _, err := Within(lib, filepath.Join(lib, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing path: %v", err)
	}
}

func TestLexical(t *testing.T) {
	_, lib := setup(t)
	got, err := Lexical(lib, "12/34.webp")
	if err != nil || got != filepath.Join(lib, "12", "34.webp") {
		t.Fatalf("Lexical = %q, %v", got, err)
	}
	for _, rel := range []string{"../x", "/abs", "a\x00b", ""} {
		if _, err := Lexical(lib, rel); !errors.Is(err, ErrOutside) {
			t.Fatalf("Lexical(%q): %v", rel, err)
		}
	}
}
