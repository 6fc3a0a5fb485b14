package testutil

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// MaxPackageLines bounds a package's non-test code: what one reads in a
// sitting (issue 36).
const MaxPackageLines = 2500

// Layout is a family of packages (Family, a directory from the module
// root, and the packages below it) held to layers: Layers names, for each
// layered package, the packages of the family it may import; a package of
// Dirs without an entry (the family's top) may import any of them.
type Layout struct {
	Family string
	Dirs   []string
	Layers map[string][]string
}

// CheckLayout fails t for every import of a layered package that its
// layer does not allow, and for every package of l.Dirs whose non-test
// code has more than MaxPackageLines lines.
func CheckLayout(t *testing.T, l Layout) {
	t.Helper()
	const mod = "github.com/bindery-nas/bindery/"
	root := RepoRoot(t)
	for _, dir := range l.Dirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join(root, dir, name)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines += strings.Count(string(raw), "\n")
			f, err := parser.ParseFile(token.NewFileSet(), path, raw, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			ok, layered := l.Layers[dir]
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				rel, inModule := strings.CutPrefix(p, mod)
				if layered && inModule && strings.HasPrefix(rel, l.Family) && !slices.Contains(ok, rel) {
					t.Errorf("%s/%s imports %s: %s may import only %q of %s's packages", dir, name, rel, dir, ok, l.Family)
				}
			}
		}
		if lines > MaxPackageLines {
			t.Errorf("%s has %d lines of non-test code, over %d: split it", dir, lines, MaxPackageLines)
		}
	}
}
