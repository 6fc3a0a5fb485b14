package api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bindery-nas/bindery/internal/testutil"
)

type spec struct {
	OpenAPI    string                    `yaml:"openapi"`
	Info       map[string]any            `yaml:"info"`
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Schemas         map[string]any `yaml:"schemas"`
		SecuritySchemes map[string]any `yaml:"securitySchemes"`
	} `yaml:"components"`
}

var echoParam = regexp.MustCompile(`:([a-z_]+)`)

// TestOpenAPIMatchesRouter: docs/openapi.yaml is structurally valid and
// lists exactly the router's routes, no more, no fewer.
func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := yaml.Unmarshal(raw, &s); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if !strings.HasPrefix(s.OpenAPI, "3.1.") || s.Info["title"] == nil || s.Info["version"] == nil ||
		len(s.Paths) == 0 || len(s.Components.Schemas) == 0 || s.Components.SecuritySchemes["bearer"] == nil {
		t.Fatalf("spec structure: openapi=%q info=%v paths=%d schemas=%d", s.OpenAPI, s.Info, len(s.Paths), len(s.Components.Schemas))
	}
	methods := map[string]bool{"get": true, "post": true, "put": true, "patch": true, "delete": true, "head": true, "options": true}
	inSpec := map[string]bool{}
	for path, item := range s.Paths {
		for m, v := range item {
			if !methods[m] {
				continue
			}
			inSpec[strings.ToUpper(m)+" "+path] = true
			if op, ok := v.(map[string]any); !ok || op["responses"] == nil {
				t.Errorf("%s %s has no responses", m, path)
			}
		}
	}
	e := setup(t)
	inRouter := map[string]bool{}
	for _, r := range e.srv.Routes() {
		if r.Method == "echo_route_not_found" || strings.HasSuffix(r.Path, "/*") {
			continue
		}
		p := echoParam.ReplaceAllString(r.Path, "{$1}")
		p = strings.Replace(p, "/duplicates/groups/{key}/", "/duplicates/groups/{group_key}/", 1)
		inRouter[r.Method+" "+p] = true
	}
	var missing, extra []string
	for k := range inRouter {
		if !inSpec[k] {
			missing = append(missing, k)
		}
	}
	for k := range inSpec {
		if !inRouter[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("spec and router differ:\nnot in spec: %v\nnot in router: %v", missing, extra)
	}
	// Every $ref points at something that exists.
	for _, ref := range regexp.MustCompile(`\$ref: "#/components/(\w+)/(\w+)"`).FindAllStringSubmatch(string(raw), -1) {
		if !strings.Contains(string(raw), "\n    "+ref[2]+":") && !strings.Contains(string(raw), "\n    "+ref[2]+": ") {
			t.Errorf("dangling $ref %s/%s", ref[1], ref[2])
		}
	}
}
