package httpx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestErrorCodesDocumented: protocol/apicodes.go is the one home of the
// API's error codes and the table of codes their one HTTP mapping. Every
// Code* constant of protocol is in the table, no other package declares
// one, and docs/openapi.yaml (the Error.code enum) and docs/OPERATIONS.md
// §9 list exactly its codes, the latter with the same status and meaning.
func TestErrorCodesDocumented(t *testing.T) {
	t.Parallel()
	root := testutil.RepoRoot(t)
	t.Run("constants", func(t *testing.T) {
		home := codeConstants(t, filepath.Join(root, "protocol"))
		if len(home) < len(codes) {
			t.Fatalf("protocol declares %d Code constants, the table has %d codes", len(home), len(codes))
		}
		for name, value := range home {
			if _, ok := codes[value]; !ok {
				t.Errorf("protocol.%s = %q is not in the table of codes", name, value)
			}
		}
		// One home: no other package that makes API errors declares codes.
		for _, dir := range []string{"internal/api", "internal/api/internal/httpx", "internal/api/internal/views", "internal/api/readers", "internal/api/duplicates", "internal/store", "internal/dedup", "internal/trash"} {
			for name, value := range codeConstants(t, filepath.Join(root, dir)) {
				t.Errorf("%s declares %s = %q: API error codes live in protocol/apicodes.go", dir, name, value)
			}
		}
		for code, c := range codes {
			if c.Meaning == "" || http.StatusText(c.Status) == "" || c.Status < 400 {
				t.Errorf("%s: status %d, meaning %q", code, c.Status, c.Meaning)
			}
		}
	})
	t.Run("openapi", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(root, "docs", "openapi.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var spec struct {
			Components struct {
				Schemas struct {
					Error struct {
						Properties struct {
							Error struct {
								Properties struct {
									Code struct {
										Enum []string `yaml:"enum"`
									} `yaml:"code"`
								} `yaml:"properties"`
							} `yaml:"error"`
						} `yaml:"properties"`
					} `yaml:"Error"`
				} `yaml:"schemas"`
			} `yaml:"components"`
		}
		if err := yaml.Unmarshal(raw, &spec); err != nil {
			t.Fatal(err)
		}
		got := spec.Components.Schemas.Error.Properties.Error.Properties.Code.Enum
		slices.Sort(got)
		if want := tableCodes(); !slices.Equal(got, want) {
			t.Errorf("openapi Error.code enum %q,\nwant the table's %q", got, want)
		}
	})
	t.Run("operations", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(root, "docs", "OPERATIONS.md"))
		if err != nil {
			t.Fatal(err)
		}
		row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d{3}) \\| (.+) \\|$")
		seen := map[string]bool{}
		for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
			c, ok := codes[m[1]]
			status, _ := strconv.Atoi(m[2])
			switch {
			case !ok:
				t.Errorf("OPERATIONS.md lists %s, which the API never answers", m[1])
			case c.Status != status || c.Meaning != m[3]:
				t.Errorf("OPERATIONS.md: %s | %d | %s; the table says %d | %s", m[1], status, m[3], c.Status, c.Meaning)
			}
			seen[m[1]] = true
		}
		for _, code := range tableCodes() {
			if !seen[code] {
				t.Errorf("OPERATIONS.md §9 does not list %s (| `%s` | %d | %s |)", code, code, codes[code].Status, codes[code].Meaning)
			}
		}
	})
}

func tableCodes() []string {
	var out []string
	for code := range codes {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}

// codeConstants returns the string constants named Code* declared in the
// package in dir (tests excluded).
func codeConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							out[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return out
}
