package scan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// TestWalkOrder checks, on random trees, that the walk emits every
// candidate exactly once and in byte order of the full relative path, the
// order of SQLite's BINARY collation that discovery merges against.
func TestWalkOrder(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		root := t.TempDir()
		// Characters around '/' (0x2f) in byte order stress the sort key.
		name := rapid.StringMatching(`[ !\-.0-9A-Za-z~é]{1,6}`)
		var want []string
		seen := map[string]bool{}
		n := rapid.IntRange(1, 30).Draw(rt, "files")
		for i := 0; i < n; i++ {
			depth := rapid.IntRange(0, 3).Draw(rt, "depth")
			parts := make([]string, 0, depth+1)
			for d := 0; d < depth; d++ {
				parts = append(parts, name.Draw(rt, "dir"))
			}
			parts = append(parts, name.Draw(rt, "file")+".cbz")
			rel := strings.Join(parts, "/")
			if skipAny(parts) || seen[rel] || conflicts(seen, rel) {
				continue
			}
			p := filepath.Join(root, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				continue // a file already holds that folder name
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				continue
			}
			seen[rel] = true
			want = append(want, rel)
		}
		sort.Strings(want)
		w := &walker{root: root, exts: map[string]bool{".cbz": true}, errs: func(e model.ScanError) {
			rt.Fatalf("walk error %+v", e)
		}}
		var got []string
		if err := w.walk(context.Background(), func(it item) error {
			got = append(got, it.rel)
			return nil
		}); err != nil {
			rt.Fatal(err)
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("walk order\n got %q\nwant %q", got, want)
		}
	})
}

func skipAny(parts []string) bool {
	for _, p := range parts {
		if skipName(p) || strings.TrimSpace(p) != p || p == "." || p == ".." {
			return true
		}
	}
	return false
}

// conflicts is true when rel would need a folder where a file is, or the
// other way round.
func conflicts(seen map[string]bool, rel string) bool {
	for s := range seen {
		if strings.HasPrefix(s, rel+"/") || strings.HasPrefix(rel, s+"/") {
			return true
		}
	}
	return false
}

func TestSymlinks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	outside := filepath.Join(t.TempDir(), "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.cbz"), cbz(t, "", pages(1)...), 0o644)
	e.file("real/a.cbz", cbz(t, "", pages(2)...), t0)
	must(t, os.Symlink(filepath.Join(outside, "secret.cbz"), filepath.Join(e.root, "escape.cbz")))
	must(t, os.Symlink(outside, filepath.Join(e.root, "escape-dir")))
	must(t, os.Symlink(filepath.Join(e.root, "real", "a.cbz"), filepath.Join(e.root, "alias.cbz")))
	must(t, os.Symlink(filepath.Join(e.root, "real"), filepath.Join(e.root, "loop")))
	c := e.scan()
	if got := e.rows(`SELECT relative_path FROM library_files ORDER BY relative_path`); !slices.Equal(got, []string{"alias.cbz", "real/a.cbz"}) {
		t.Fatalf("files: %v", got)
	}
	errs := e.rows(`SELECT relative_path, error_code FROM scan_errors ORDER BY relative_path`)
	if !slices.Equal(errs, []string{"escape-dir|" + protocol.ErrSymlinkEscape, "escape.cbz|" + protocol.ErrSymlinkEscape}) {
		t.Fatalf("errors: %v", errs)
	}
	if c.ErrorCount != 2 {
		t.Fatalf("error_count %d", c.ErrorCount)
	}
	if got := e.one(`SELECT status FROM scan_sessions`); got != "succeeded" {
		t.Fatalf("status %s", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
