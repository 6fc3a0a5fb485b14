package web_test

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// spec is the part of docs/openapi.yaml the dashboard must respect: each
// documented "METHOD /path/{param}" with its query parameter names.
type spec map[string]map[string]bool

func loadSpec(t *testing.T) spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "openapi.yaml"))
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	type param struct {
		Ref  string `yaml:"$ref"`
		Name string `yaml:"name"`
		In   string `yaml:"in"`
	}
	var doc struct {
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			Parameters map[string]param `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	resolve := func(p param) param {
		if p.Ref != "" {
			return doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
		}
		return p
	}
	out := spec{}
	for path, item := range doc.Paths {
		var shared []param
		if n, ok := item["parameters"]; ok {
			_ = n.Decode(&shared)
		}
		for method, n := range item {
			if method == "parameters" || strings.HasPrefix(method, "x-") {
				continue
			}
			var op struct {
				Parameters []param `yaml:"parameters"`
			}
			if err := n.Decode(&op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			q := map[string]bool{}
			for _, p := range append(append([]param(nil), shared...), op.Parameters...) {
				if p = resolve(p); p.In == "query" {
					q[p.Name] = true
				}
			}
			out[strings.ToUpper(method)+" "+path] = q
		}
	}
	return out
}

// match finds the documented operation of a concrete method and path;
// when templates overlap (/thumbnails/metrics, /thumbnails/{id}) the one
// with more literal segments wins, as in the router.
func (s spec) match(method, path string) (string, map[string]bool) {
	segs := strings.Split(path, "/")
	best, bestLit := "", -1
	for op := range s {
		m, tmpl, _ := strings.Cut(op, " ")
		if m != method && method != "*" {
			continue
		}
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		ok, lit := true, 0
		for i := range ts {
			switch {
			case strings.HasPrefix(ts[i], "{") && strings.HasSuffix(ts[i], "}"):
				ok = ok && segs[i] != ""
			case ts[i] == segs[i]:
				lit++
			default:
				ok = false
			}
		}
		if ok && (lit > bestLit || lit == bestLit && op < best) {
			best, bestLit = op, lit
		}
	}
	if best == "" {
		return "", nil
	}
	return best, s[best]
}

// checkRequests asserts that every request the browser made is either a
// dashboard asset or a documented API operation with documented query
// parameters, and that the dashboard used a broad part of the API.
func checkRequests(t *testing.T, reqs []string, minOps int) {
	t.Helper()
	s := loadSpec(t)
	used := map[string]bool{}
	for _, r := range reqs {
		method, uri, _ := strings.Cut(r, " ")
		u, err := url.Parse(uri)
		if err != nil {
			t.Errorf("request %q: %v", r, err)
			continue
		}
		if !strings.HasPrefix(u.Path, "/api/") {
			if method != "GET" {
				t.Errorf("non-API request %s", r)
			}
			continue
		}
		op, q := s.match(method, u.Path)
		if op == "" {
			t.Errorf("the dashboard requested %s, which docs/openapi.yaml does not document", r)
			continue
		}
		used[op] = true
		for name := range u.Query() {
			if !q[name] {
				t.Errorf("%s: query parameter %q is not documented for %s", r, name, op)
			}
		}
	}
	list := make([]string, 0, len(used))
	for op := range used {
		list = append(list, op)
	}
	sort.Strings(list)
	t.Logf("%d requests, %d documented operations used: %s", len(reqs), len(list), strings.Join(list, ", "))
	if len(list) < minOps {
		t.Errorf("only %d API operations were exercised", len(list))
	}
}

// TestEveryUIPathIsDocumented reads the dashboard's JavaScript: every API
// path template in it (a string starting with "/" that is not an asset)
// must be a path of docs/openapi.yaml, for some method.
func TestEveryUIPathIsDocumented(t *testing.T) {
	s := loadSpec(t)
	lit := regexp.MustCompile("['\"`](/[a-z][^'\"`]*)['\"`]")
	interp := regexp.MustCompile(`\$\{[^}]*\}`)
	found := 0
	err := filepath.WalkDir("static/js", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".js" {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(src), -1) {
			path := m[1]
			if strings.HasPrefix(path, "/api/") && path != "/api/v1" {
				t.Errorf("%s: %q: use the API base, not a literal /api path", p, path)
			}
			if path == "/api/v1" {
				continue
			}
			path, _, _ = strings.Cut(interp.ReplaceAllString(path, "X"), "?")
			if op, _ := s.match("*", "/api/v1"+path); op == "" {
				t.Errorf("%s: %q is not a path of docs/openapi.yaml", p, m[1])
			}
			found++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found only %d API paths in the JavaScript: the pattern is broken", found)
	}
	t.Logf("%d API path templates checked", found)
}
