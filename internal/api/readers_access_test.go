package api_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestReaderStatuses sends each reader and user route the requests that
// give its documented statuses (the spec check in TestMain needs each).
func TestReaderStatuses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	book := e.file(lib, "A/A 1.cbz")
	ser := e.series(lib, "A", book)
	id := e.user("ann", "ann's password", lib)
	e.user("bob", "bob's password")
	ann := basic("ann", "ann's password")
	u := fmt.Sprintf("/api/v1/users/%d", id)
	for _, c := range []struct {
		method, path, body, auth string
		status                   int
	}{
		{"GET", "/api/v1/users?limit=0", "", "", 400},
		{"GET", u, "", "", 200},
		{"GET", "/api/v1/users/x", "", "", 400},
		{"PATCH", u, `{"password":"x"}`, "", 400},
		{"PATCH", "/api/v1/users/999", `{"disabled":true}`, "", 404},
		{"PATCH", u, `{"name":"bob"}`, "", 409},
		{"DELETE", "/api/v1/users/x", "", "", 400},
		{"PUT", u + "/libraries", `{}`, "", 400},
		{"PUT", "/api/v1/users/999/libraries", `{"library_ids":[]}`, "", 404},
		{"GET", "/api/v1/users/x/api-keys", "", "", 400},
		{"GET", "/api/v1/users/999/api-keys", "", "", 404},
		{"DELETE", u + "/api-keys/x", "", "", 400},
		{"GET", "/api/v1/me/progress/x", "", ann, 400},
		{"GET", "/api/v1/me/progress/999", "", ann, 404},
		{"GET", fmt.Sprintf("/api/v1/me/progress/%d", book), "", "Bearer " + testToken, 403},
		{"DELETE", "/api/v1/me/progress/x", "", ann, 400},
		{"DELETE", "/api/v1/me/progress/999", "", ann, 404},
		{"DELETE", fmt.Sprintf("/api/v1/me/progress/%d", book), "", "Bearer " + testToken, 403},
		{"GET", "/api/v1/me/continue-reading?limit=0", "", ann, 400},
		{"GET", "/api/v1/me/on-deck?limit=0", "", ann, 400},
		{"GET", "/api/v1/me/on-deck", "", ann, 200},
		{"GET", "/api/v1/me/series/x/next-unread", "", ann, 400},
		{"GET", "/opds/v1.2/libraries/x", "", ann, 400},
		{"GET", "/opds/v1.2/libraries/999", "", ann, 404},
		{"GET", "/opds/v1.2/series?page=x", "", ann, 400},
		{"GET", "/opds/v1.2/series/x", "", ann, 400},
		{"GET", "/opds/v1.2/series/999", "", ann, 404},
		{"GET", fmt.Sprintf("/opds/v1.2/series/%d", ser), "", ann, 200},
		{"GET", "/opds/v1.2/continue-reading?page=0", "", ann, 400},
		{"GET", "/opds/v1.2/on-deck?page=0", "", ann, 400},
		{"GET", "/opds/v1.2/files/999/pages/0", "", ann, 404},
		{"GET", fmt.Sprintf("/opds/v1.2/files/%d/pages/-1", book), "", ann, 400},
	} {
		auth := c.auth
		if auth == "" {
			auth = "Bearer " + testToken
		}
		if r := e.callAuth(c.method, c.path, c.body, auth); r.Code != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.Code, r.Body, c.status)
		}
	}
}

var idInMessage = regexp.MustCompile(`\d+`)

// TestReaderAccessProperty: random users with random grants ask random
// reader routes about random ids. A user never gets an item outside the
// grant, and an item outside the grant is answered byte for byte like one
// that does not exist (ids aside), so no status says it exists.
func TestReaderAccessProperty(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rng := rand.New(rand.NewPCG(37, 22))
	var libs []int64
	fileLib, seriesLib := map[int64]int64{}, map[int64]int64{}
	for l := range 4 {
		lib := e.library(fmt.Sprintf("lib%d", l))
		libs = append(libs, lib)
		for s := range 2 {
			var files []int64
			for b := range 3 {
				f := e.file(lib, fmt.Sprintf("S%d/B%d.cbz", s, b))
				files = append(files, f)
				fileLib[f] = lib
			}
			seriesLib[e.series(lib, fmt.Sprintf("S%d-%d", l, s), files...)] = lib
		}
	}
	const missing = 987654
	routes := []struct {
		path string
		kind map[int64]int64 // id → library; nil: a library id
	}{
		{"/api/v1/me/progress/%d", fileLib}, {"/api/v1/files/%d/cover", fileLib},
		{"/opds/v1.2/files/%d/pages/0", fileLib}, {"/opds/v1.2/series/%d", seriesLib},
		{"/api/v1/me/series/%d/next-unread", seriesLib}, {"/opds/v1.2/libraries/%d", nil},
	}
	lists := []string{"/opds/v1.2/catalog", "/opds/v1.2/series", "/opds/v1.2/recent", "/opds/v1.2/search?q=b", "/api/v1/search?q=b",
		"/api/v1/me/continue-reading", "/api/v1/me/on-deck"}
	for u := range 6 {
		grant := map[int64]bool{}
		var ids []int64
		for _, l := range libs {
			if rng.IntN(2) == 0 {
				grant[l], ids = true, append(ids, l)
			}
		}
		name := fmt.Sprintf("user%d", u)
		e.user(name, "the password", ids...)
		auth := basic(name, "the password")
		for f, l := range fileLib { // some progress, so lists have content
			if grant[l] && rng.IntN(3) == 0 {
				e.expect(e.callAuth("PUT", fmt.Sprintf("/api/v1/me/progress/%d", f), `{"page":2}`, auth), 200, "")
			}
		}
		for range 40 {
			rt := routes[rng.IntN(len(routes))]
			id, lib := pickID(rng, rt.kind, libs)
			got := e.callAuth("GET", fmt.Sprintf(rt.path, id), "", auth)
			none := e.callAuth("GET", fmt.Sprintf(rt.path, missing), "", auth)
			if grant[lib] {
				// Inside the grant a 404 may say what is missing: a cover
				// not rendered, or (these rows have no file on disk) the
				// book's file; never that the row does not exist.
				if got.Code == 404 && got.errCode() != "cover_not_ready" && got.errCode() != "media_missing" {
					t.Fatalf("%s of %d inside the grant: %d %s", rt.path, id, got.Code, got.Body)
				}
				continue
			}
			if got.Code != none.Code || idInMessage.ReplaceAllString(string(got.Body), "N") != idInMessage.ReplaceAllString(string(none.Body), "N") {
				t.Fatalf("%s: outside the grant %d %s, missing %d %s", rt.path, got.Code, got.Body, none.Code, none.Body)
			}
		}
		for _, l := range lists {
			body := string(e.callAuth("GET", l, "", auth).Body)
			for f, fl := range fileLib {
				if !grant[fl] && (strings.Contains(body, fmt.Sprintf("file:%d<", f)) || strings.Contains(body, fmt.Sprintf(`"id":%d,`, f))) {
					t.Fatalf("%s shows file %d outside the grant", l, f)
				}
			}
			for s, sl := range seriesLib {
				if !grant[sl] && strings.Contains(body, fmt.Sprintf("series:%d<", s)) {
					t.Fatalf("%s shows series %d outside the grant", l, s)
				}
			}
			for _, lb := range libs {
				if !grant[lb] && strings.Contains(body, fmt.Sprintf("library:%d<", lb)) {
					t.Fatalf("%s shows library %d outside the grant", l, lb)
				}
			}
		}
	}
}

func pickID(rng *rand.Rand, kind map[int64]int64, libs []int64) (id, lib int64) {
	if kind == nil {
		l := libs[rng.IntN(len(libs))]
		return l, l
	}
	n := rng.IntN(len(kind))
	for id, lib := range kind {
		if n == 0 {
			return id, lib
		}
		n--
	}
	return 0, 0
}
