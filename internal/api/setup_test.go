package api_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bindery-nas/bindery/internal/api"
	"github.com/bindery-nas/bindery/internal/events"
	"github.com/bindery-nas/bindery/internal/natsort"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

const testToken = "test-token-0123456789abcdef"

// testCoverKey signs the cover URLs of every test server.
var testCoverKey = []byte("test-cover-key-0123456789abcdef!")

type env struct {
	t      testing.TB
	ctx    context.Context
	st     *store.Store
	worker *store.Store
	srv    *api.Server
	path   string
	root   string // the library root
	state  string // the state dir
	broker *events.Broker
}

// setup opens a fresh database, a library root and a state dir in temp
// folders, and builds the server on them.
func setup(t testing.TB) *env {
	t.Helper()
	return setupRoot(t, "")
}

// setupRoot is setup with root as the library root ("" a temp folder).
func setupRoot(t testing.TB, root string) *env {
	t.Helper()
	control, worker, path := storetest.MustOpenDB(t)
	dir := t.TempDir()
	if root == "" {
		root = filepath.Join(dir, "libraries")
	}
	e := &env{t: t, ctx: context.Background(), st: control, worker: worker, path: path,
		root: root, state: filepath.Join(dir, "state")}
	for _, d := range []string{e.root, filepath.Join(e.state, "covers")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.broker = events.New(events.Config{Store: control, Interval: 20 * 1e6})
	srv, err := api.New(api.Config{Store: control, Token: testToken, CoverKey: testCoverKey, LibraryRoots: []string{e.root},
		StateDir: e.state, Events: e.broker, Logger: slog.New(slog.NewTextHandler(newTestLog(t), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	return e
}

type resp struct {
	Code int
	Body []byte
	Hdr  http.Header
}

// errCode is the error.code of an error body.
func (r resp) errCode() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Error.Code
}

func (r resp) decode(t testing.TB, dst any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, dst); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// call sends one request with the test token.
func (e *env) call(method, target, body string) resp {
	return e.callAuth(method, target, body, "Bearer "+testToken)
}

func (e *env) callAuth(method, target, body, auth string) resp {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return serve(e.srv, req)
}

// serve runs one request through srv and records its status for the
// documented-status check (TestMain).
func serve(srv *api.Server, req *http.Request) resp {
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	recordStatus(req.Method, req.URL.Path, rec.Code)
	return resp{Code: rec.Code, Body: rec.Body.Bytes(), Hdr: rec.Header()}
}

// expect checks the status and, for errors, the code.
func (e *env) expect(r resp, status int, code string) {
	e.t.Helper()
	if r.Code != status || (code != "" && r.errCode() != code) {
		e.t.Fatalf("got %d %s, want %d %s", r.Code, r.Body, status, code)
	}
}

// snapshot dumps every table so that a test can prove a refused request
// changed nothing.
func (e *env) snapshot() string {
	e.t.Helper()
	db, err := store.OpenRaw(e.path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(storetest.TablesSQL())
	if err != nil {
		e.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		// Ordered by the first column (the primary key of every table,
		// including WITHOUT ROWID ones such as duplicate_groups' summary).
		rs, err := db.Query(`SELECT * FROM "` + tb + `" ORDER BY 1, 2`)
		if err != nil {
			e.t.Fatal(err)
		}
		cols, _ := rs.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rs.Next() {
			_ = rs.Scan(ptrs...)
			fmt.Fprintf(&b, "%s %v\n", tb, vals)
		}
		rs.Close()
	}
	return b.String()
}

// unchanged runs fn and fails when the database differs afterwards.
func (e *env) unchanged(fn func()) {
	e.t.Helper()
	before := e.snapshot()
	fn()
	if after := e.snapshot(); after != before {
		e.t.Fatalf("database changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func (e *env) now() string { return protocol.FormatTime(e.st.Now()) }

// library creates a folder under the root and registers it through the API.
func (e *env) library(name string) int64 {
	e.t.Helper()
	dir := filepath.Join(e.root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	r := e.call("POST", "/api/v1/libraries", fmt.Sprintf(`{"name":%q,"path":%q}`, name, dir))
	e.expect(r, 201, "")
	var l struct{ ID int64 }
	r.decode(e.t, &l)
	return l.ID
}

// file inserts a library_files row as workerd's scanner would.
func (e *env) file(lib int64, rel string) int64 {
	e.t.Helper()
	now := e.now()
	id, err := storetest.InsertID(e.ctx, e.worker, `INSERT INTO library_files (library_id, relative_path, path_key, size_bytes, mtime_ns, format,
		total_pages, needs_analysis, created_at, updated_at) VALUES (?, ?, ?, 1000, 1700000000000000000, 'zip', 12, 0, ?, ?) RETURNING id`,
		lib, rel, natsort.Key(rel), now, now)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// exec runs SQL as a third party (controld role).
func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	if _, err := storetest.Exec(e.ctx, e.st, q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// testLog writes the server's error log into the test's output (an
// internal_error then says why), until the test ends.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func newTestLog(t testing.TB) *testLog {
	l := &testLog{t: t}
	t.Cleanup(l.stop)
	return l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

// unhex is a digest given in hex, as the database stores it.
func unhex(h string) []byte {
	b, err := hex.DecodeString(h)
	if err != nil {
		panic(err)
	}
	return b
}
