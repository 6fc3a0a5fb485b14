package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// A scan request may name folders of its library; every bad form is a 400
// invalid_field on "paths" that says what is wrong.
func TestScanFolders(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.library("a")
	for _, d := range []string{"Batman (2016)/Annuals", "Saga"} {
		if err := os.MkdirAll(filepath.Join(e.root, "a", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.root, "a", "x.cbz"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.state, filepath.Join(e.root, "a", "out")); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		`[]`:                "at least one folder",
		`["/etc/"]`:         "absolute",
		`["../b/"]`:         "climbs out",
		`["Saga/../../b"]`:  "climbs out",
		`["Nope/"]`:         "does not exist",
		`["x.cbz"]`:         "not a folder",
		`["out/"]`:          "outside the library",
		`"Saga/"`:           "",
		`["Saga/", "a\\b"]`: "backslash",
	}
	for paths, msg := range bad {
		r := e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d,"paths":%s}`, a, paths))
		e.expect(r, 400, "")
		if !strings.Contains(string(r.Body), msg) || (msg != "" && !strings.Contains(string(r.Body), `"paths"`)) {
			t.Errorf("paths %s: %s; want a paths error saying %q", paths, r.Body, msg)
		}
	}
	e.expect(e.call("POST", "/api/v1/jobs", `{"kind":"hash","paths":["Saga/"]}`), 400, "invalid_field")
	e.expect(e.call("POST", "/api/v1/jobs", `{"kind":"scan","library_id":999,"paths":["Saga/"]}`), 404, "")
	r := e.call("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d,"paths":["Batman (2016)/Annuals","Saga","Batman (2016)"]}`, a))
	e.expect(r, 201, "")
	var job struct{ Payload struct{ Paths []string } }
	r.decode(t, &job)
	if got := strings.Join(job.Payload.Paths, "|"); got != "Batman (2016)/|Saga/" {
		t.Fatalf("job payload paths %q", got)
	}
}

// A library's watch mode is set at creation, changed by PATCH and refused
// when it is none of auto, inotify, poll, off.
func TestLibraryWatchMode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := filepath.Join(e.root, "w")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.expect(e.call("POST", "/api/v1/libraries", fmt.Sprintf(`{"name":"w","path":%q,"watch":"sometimes"}`, dir)), 400, "invalid_field")
	r := e.call("POST", "/api/v1/libraries", fmt.Sprintf(`{"name":"w","path":%q,"watch":"poll"}`, dir))
	e.expect(r, 201, "")
	var lib struct {
		ID    int64
		Watch string
	}
	r.decode(t, &lib)
	if lib.Watch != "poll" {
		t.Fatalf("created with watch %q", lib.Watch)
	}
	e.expect(e.call("PATCH", fmt.Sprintf("/api/v1/libraries/%d", lib.ID), `{"watch":"OFF"}`), 400, "invalid_field")
	r = e.call("PATCH", fmt.Sprintf("/api/v1/libraries/%d", lib.ID), `{"watch":"off"}`)
	e.expect(r, 200, "")
	r = e.call("GET", fmt.Sprintf("/api/v1/libraries/%d", lib.ID), "")
	r.decode(t, &lib)
	if lib.Watch != "off" {
		t.Fatalf("after PATCH watch %q", lib.Watch)
	}
	if _, err := storetest.Exec(e.ctx, e.st, `UPDATE libraries SET watch = 'sometimes' WHERE id = ?`, lib.ID); err == nil {
		t.Fatal("the database accepted watch = 'sometimes'")
	}
}
