package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// concrete fills a route template's parameters with plausible values.
func concrete(path string) string {
	r := strings.NewReplacer(":id", "1", ":key", "sha256:"+strings.Repeat("a", 64))
	out := r.Replace(path)
	if strings.HasSuffix(out, "/settings/:key") {
		out = strings.TrimSuffix(out, ":key") + "scan.max_workers"
	}
	return out
}

var publicRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// TestEveryRouteNeedsToken walks the router: every /api/v1 route refuses a
// missing, wrong or malformed token with 401 and leaves the database
// unchanged; only the documented public routes answer without one.
func TestEveryRouteNeedsToken(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.library("one")
	auths := map[string]string{
		"missing":        "",
		"wrong":          "Bearer wrong-token-0123456789abcdef",
		"prefix":         "Bearer " + testToken[:len(testToken)-1],
		"longer":         "Bearer " + testToken + "x",
		"basic":          "Basic " + testToken,
		"no scheme":      testToken,
		"empty bearer":   "Bearer ",
		"token in query": "",
	}
	routes := 0
	for _, rt := range e.srv.Routes() {
		if rt.Method == "echo_route_not_found" || strings.HasSuffix(rt.Path, "/*") {
			continue
		}
		path := concrete(rt.Path)
		if publicRoutes[rt.Path] {
			r := e.callAuth(rt.Method, path, "", "")
			if r.Code == http.StatusUnauthorized {
				t.Errorf("public %s %s wants a token", rt.Method, rt.Path)
			}
			continue
		}
		if !strings.HasPrefix(rt.Path, "/api/v1/") && !strings.HasPrefix(rt.Path, "/opds/") {
			t.Errorf("route %s %s is neither public nor under /api/v1 or /opds", rt.Method, rt.Path)
			continue
		}
		routes++
		for name, auth := range auths {
			target := path
			if name == "token in query" {
				target += "?token=" + testToken
			}
			e.unchanged(func() {
				// Each route from its own address: reader routes lock an
				// address after repeated failures (TestLoginRateLimit).
				r := e.callFrom(fmt.Sprintf("10.1.%d.%d", routes/250, routes%250), rt.Method, target, `{"name":"x"}`, auth)
				if r.Code != http.StatusUnauthorized || r.errCode() != "unauthorized" {
					t.Errorf("%s %s with %s token: %d %s", rt.Method, rt.Path, name, r.Code, r.Body)
				}
				if r.Hdr.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: no WWW-Authenticate", rt.Method, rt.Path)
				}
			})
		}
	}
	if routes < 35 {
		t.Fatalf("walked only %d authenticated routes", routes)
	}
	t.Run("unknown route under /api/v1 also needs the token", func(t *testing.T) {
		e.expect(e.callAuth("GET", "/api/v1/nope", "", ""), 401, "unauthorized")
		e.expect(e.call("GET", "/api/v1/nope", ""), 404, "not_found")
	})
}
