package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// errorCodes reads the error-code constants of protocol/errors.go.
func errorCodes(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(testutil.RepoRoot(t), "protocol", "errors.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || !strings.HasPrefix(name.Name, "Err") || lit.Kind != token.STRING {
					continue
				}
				code, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, code)
			}
		}
	}
	if len(codes) < 10 {
		t.Fatalf("found only %d error codes in %s", len(codes), path)
	}
	return codes
}

var settingRef = regexp.MustCompile("`((?:scan|hash|cover|thumbnail|jobs|wal|io|cleanup)\\.[a-z0-9_.]+)`")

// TestOperationsGuide keeps docs/OPERATIONS.md in step with the code: every
// error code has a row in its table, and every setting it names exists.
func TestOperationsGuide(t *testing.T) {
	doc := readFile(t, filepath.Join(testutil.RepoRoot(t), "docs", "OPERATIONS.md"))
	t.Run("error codes", func(t *testing.T) {
		for _, code := range errorCodes(t) {
			if !strings.Contains(doc, "| `"+code+"` |") {
				t.Errorf("error code %s has no row in OPERATIONS.md §9", code)
			}
		}
	})
	t.Run("settings", func(t *testing.T) {
		refs := settingRef.FindAllStringSubmatch(doc, -1)
		if len(refs) < 10 {
			t.Fatalf("found only %d setting references", len(refs))
		}
		for _, m := range refs {
			if _, ok := settings.Lookup(m[1]); !ok {
				t.Errorf("OPERATIONS.md names the setting %s, which does not exist", m[1])
			}
		}
	})
	t.Run("every setting", func(t *testing.T) {
		var missing []string
		for _, d := range settings.Definitions() {
			row := "| `" + d.Key + "` | `" + d.Default + "` | " + d.Description + " |"
			if !strings.Contains(doc, row) {
				missing = append(missing, row)
			}
		}
		if len(missing) > 0 {
			t.Errorf("OPERATIONS.md §7 \"Every setting\" lacks (or has another default or meaning for) these rows:\n%s",
				strings.Join(missing, "\n"))
		}
	})
	t.Run("sections", func(t *testing.T) {
		for _, h := range []string{"Install with Docker Compose", "Install with systemd", "Upgrade",
			"Backup and restore", "cover cache", "Tuning", "Logs, health and metrics", "Error codes", "NFS/SMB"} {
			if !strings.Contains(doc, h) {
				t.Errorf("OPERATIONS.md lacks a section on %q", h)
			}
		}
	})
}
