package testutil

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageIsSmall holds every package of the module to
// MaxPackageLines of non-test code (issue 36); the families with layers
// (api, bench, chaos) check those in their own TestPackageLayout.
func TestEveryPackageIsSmall(t *testing.T) {
	root := RepoRoot(t)
	var dirs []string
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "var" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if !seen[rel] {
				seen[rel] = true
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 40 {
		t.Fatalf("only %d packages found under %s: the walk is not seeing the module", len(dirs), root)
	}
	CheckLayout(t, Layout{Dirs: dirs})
}
