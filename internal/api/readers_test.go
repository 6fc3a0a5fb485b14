package api_test

import (
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

func basic(name, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+password))
}

// user creates a reader through the admin API with a grant.
func (e *env) user(name, password string, libs ...int64) int64 {
	e.t.Helper()
	ids := make([]string, len(libs))
	for i, l := range libs {
		ids[i] = fmt.Sprint(l)
	}
	r := e.call("POST", "/api/v1/users", fmt.Sprintf(`{"name":%q,"password":%q,"library_ids":[%s]}`,
		name, password, strings.Join(ids, ",")))
	e.expect(r, 201, "")
	var u struct{ ID int64 }
	r.decode(e.t, &u)
	return u.ID
}

// callFrom sends a request from a given peer address.
func (e *env) callFrom(addr, method, target, body, auth string) resp {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = addr + ":5555"
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return serve(e.srv, req)
}

func TestUserAccounts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	id := e.user("ann", "correct horse", lib)
	e.expect(e.call("POST", "/api/v1/users", `{"name":"ann","password":"another one"}`), 409, "user_exists")
	e.expect(e.call("POST", "/api/v1/users", `{"name":"a:b","password":"another one"}`), 400, "invalid_field")
	e.expect(e.call("POST", "/api/v1/users", `{"name":"bob","password":"short"}`), 400, "invalid_field")
	e.expect(e.call("POST", "/api/v1/users", `{"name":"bob","password":"long enough","library_ids":[999]}`), 404, "library_not_found")
	e.expect(e.call("GET", "/api/v1/users/999", ""), 404, "user_not_found")
	r := e.call("GET", "/api/v1/users", "")
	e.expect(r, 200, "")
	if strings.Contains(string(r.Body), "argon2") || strings.Contains(string(r.Body), "bob") || !strings.Contains(string(r.Body), `"ann"`) {
		t.Fatalf("user list %s", r.Body)
	}
	e.expect(e.callAuth("GET", "/api/v1/me", "", basic("ann", "correct horse")), 200, "")
	e.expect(e.callAuth("GET", "/api/v1/me", "", basic("ann", "wrong horse")), 401, "unauthorized")
	e.expect(e.callAuth("GET", "/api/v1/users", "", basic("ann", "correct horse")), 401, "unauthorized")
	// A password reset ends the old password at once, cached or not.
	e.expect(e.call("PATCH", fmt.Sprintf("/api/v1/users/%d", id), `{"password":"battery staple"}`), 200, "")
	e.expect(e.callAuth("GET", "/api/v1/me", "", basic("ann", "correct horse")), 401, "unauthorized")
	e.expect(e.callAuth("GET", "/api/v1/me", "", basic("ann", "battery staple")), 200, "")
	e.expect(e.call("PATCH", fmt.Sprintf("/api/v1/users/%d", id), `{"disabled":true}`), 200, "")
	e.expect(e.callAuth("GET", "/api/v1/me", "", basic("ann", "battery staple")), 401, "unauthorized")
	e.expect(e.call("PATCH", fmt.Sprintf("/api/v1/users/%d", id), `{"disabled":false,"name":"anna"}`), 200, "")
	e.expect(e.callAuth("GET", "/api/v1/me", "", basic("anna", "battery staple")), 200, "")
	e.expect(e.call("PUT", fmt.Sprintf("/api/v1/users/%d/libraries", id), `{"library_ids":[]}`), 200, "")
	r = e.callAuth("GET", "/api/v1/me", "", basic("anna", "battery staple"))
	if !strings.Contains(string(r.Body), `"library_ids":[]`) {
		t.Fatalf("grant not emptied: %s", r.Body)
	}
	e.expect(e.call("DELETE", fmt.Sprintf("/api/v1/users/%d", id), ""), 204, "")
	e.expect(e.call("DELETE", fmt.Sprintf("/api/v1/users/%d", id), ""), 404, "user_not_found")
	e.expect(e.callAuth("GET", "/api/v1/me", "", basic("anna", "battery staple")), 401, "unauthorized")
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	e := setup(t)
	id := e.user("kim", "kim's password")
	keys := fmt.Sprintf("/api/v1/users/%d/api-keys", id)
	r := e.call("POST", keys, `{"name":"panels"}`)
	e.expect(r, 201, "")
	var k struct {
		ID  int64
		Key string
	}
	r.decode(t, &k)
	if !strings.HasPrefix(k.Key, "bnd_") {
		t.Fatalf("key %q", k.Key)
	}
	list := e.call("GET", keys, "")
	e.expect(list, 200, "")
	if strings.Contains(string(list.Body), k.Key) || !strings.Contains(string(list.Body), "panels") {
		t.Fatalf("key list shows the key or lacks it: %s", list.Body)
	}
	e.expect(e.callAuth("GET", "/api/v1/me", "", "Bearer "+k.Key), 200, "")
	e.expect(e.callAuth("GET", "/api/v1/me?apikey="+k.Key, "", ""), 200, "")
	req := httptest.NewRequest("GET", "/api/v1/me", nil)
	req.Header.Set("X-API-Key", k.Key)
	e.expect(serve(e.srv, req), 200, "")
	e.expect(e.callAuth("GET", "/api/v1/me?apikey=bnd_nope", "", ""), 401, "unauthorized")
	if used := e.call("GET", keys, ""); !strings.Contains(string(used.Body), `"last_used_at":"20`) {
		t.Fatalf("key use not recorded: %s", used.Body)
	}
	e.expect(e.call("DELETE", fmt.Sprintf("%s/%d", keys, k.ID+1), ""), 404, "api_key_not_found")
	e.expect(e.call("DELETE", fmt.Sprintf("%s/%d", keys, k.ID), ""), 204, "")
	e.expect(e.callAuth("GET", "/api/v1/me", "", "Bearer "+k.Key), 401, "unauthorized")
	e.expect(e.call("POST", "/api/v1/users/999/api-keys", `{"name":"x"}`), 404, "user_not_found")
	e.expect(e.call("POST", keys, `{"name":""}`), 400, "invalid_field")
}

// TestLoginRateLimit: failures for one name lock that name (even with the
// right password) whether or not it exists, and one address that fails
// for many names is locked too; other callers are not.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.user("lee", "lee's password")
	for i := range 10 {
		e.expect(e.callFrom(fmt.Sprintf("10.0.0.%d", i), "GET", "/api/v1/me", "", basic("lee", "guess")), 401, "unauthorized")
		e.expect(e.callFrom(fmt.Sprintf("10.0.1.%d", i), "GET", "/api/v1/me", "", basic("ghost", "guess")), 401, "unauthorized")
	}
	locked := e.callFrom("10.0.2.1", "GET", "/api/v1/me", "", basic("lee", "lee's password"))
	e.expect(locked, 429, "too_many_attempts")
	ghost := e.callFrom("10.0.2.1", "GET", "/api/v1/me", "", basic("ghost", "guess"))
	e.expect(ghost, 429, "too_many_attempts")
	if locked.Hdr.Get("Retry-After") == "" || string(locked.Body) != string(ghost.Body) {
		t.Fatalf("lock of a real and an unknown name differ: %s / %s", locked.Body, ghost.Body)
	}
	for i := range 50 {
		e.callFrom("10.9.9.9", "GET", "/api/v1/me", "", basic(fmt.Sprintf("n%d", i), "guess"))
	}
	e.expect(e.callFrom("10.9.9.9", "GET", "/api/v1/me", "", basic("other", "guess")), 429, "too_many_attempts")
	e.expect(e.callFrom("10.9.9.9", "GET", "/api/v1/me", "", "Bearer bnd_guess"), 429, "too_many_attempts")
	e.expect(e.call("GET", "/api/v1/me", ""), 200, "") // the admin token is never limited
}
