package bench_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestPackageLayout keeps the bench driver's packages in their layers
// (issue 36): the plumbing (internal/benchx) imports no package of the
// driver, the workload families (micro, daemons) only the plumbing, never
// package bench or each other; and no package's code (tests excluded)
// outgrows what one reads in a sitting.
func TestPackageLayout(t *testing.T) {
	t.Parallel()
	const mod = "github.com/bindery-nas/bindery/"
	root := testutil.RepoRoot(t)
	allowed := map[string][]string{
		"internal/bench/internal/benchx": nil,
		"internal/bench/micro":           {"internal/bench/internal/benchx"},
		"internal/bench/daemons":         {"internal/bench/internal/benchx"},
	}
	const maxLines = 2500
	for _, dir := range []string{"internal/bench", "internal/bench/internal/benchx", "internal/bench/micro", "internal/bench/daemons"} {
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
			ok, layered := allowed[dir]
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				rel, inModule := strings.CutPrefix(p, mod)
				if !layered || !inModule || !strings.HasPrefix(rel, "internal/bench") {
					continue
				}
				if !slices.Contains(ok, rel) {
					t.Errorf("%s/%s imports %s: %s may import only %q of the driver's packages", dir, name, rel, dir, ok)
				}
			}
		}
		if lines > maxLines {
			t.Errorf("%s has %d lines of non-test code, over %d: split it", dir, lines, maxLines)
		}
	}
}
