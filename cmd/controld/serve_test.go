package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

func newTestMain(t *testing.T, args ...string) *Main {
	t.Helper()
	if _, ok := os.LookupEnv("BINDERY_LIBRARY_ROOT"); !ok {
		t.Setenv("BINDERY_LIBRARY_ROOT", t.TempDir())
	}
	m := NewMain()
	m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := m.ParseFlags(append([]string{"--listen", "127.0.0.1:0"}, args...)); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestServe(t *testing.T) {
	t.Setenv("BINDERY_ADMIN_TOKEN", "")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, r := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(dir, r), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := newTestMain(t, "--state-dir", state, "--library-root", dir+"/a,"+dir+"/b", "--library-root", dir+"/c")
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := strings.Join(m.Config.LibraryRoots, " "); got != dir+"/a "+dir+"/b "+dir+"/c" {
		t.Fatalf("roots = %s", got)
	}
	fi, err := os.Stat(filepath.Join(state, "admin.token"))
	if err != nil || fi.Mode().Perm() != 0o600 || len(m.Token) != 64 {
		t.Fatalf("token file %v %v, token %d chars", fi.Mode(), err, len(m.Token))
	}
	get := func(path, tok string) int {
		req, _ := http.NewRequest("GET", "http://"+m.Addr()+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if c := get("/readyz", ""); c != 200 {
		t.Fatalf("readyz %d", c)
	}
	if c := get("/api/v1/jobs", ""); c != 401 {
		t.Fatalf("no token: %d", c)
	}
	if c := get("/api/v1/jobs", m.Token); c != 200 {
		t.Fatalf("token: %d", c)
	}
	if m.HTTPTimeouts() == "" {
		t.Fatal("no timeouts")
	}
	keyFile := filepath.Join(state, "cover-url.key")
	key, err := os.ReadFile(keyFile)
	if fi, serr := os.Stat(keyFile); err != nil || serr != nil || fi.Mode().Perm() != 0o600 || len(strings.TrimSpace(string(key))) != 64 {
		t.Fatalf("cover URL key file: %q %v %v", key, err, serr)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Run("second start reuses the token", func(t *testing.T) {
		m2 := newTestMain(t, "--state-dir", state)
		if err := m2.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer m2.Close()
		if m2.Token != m.Token {
			t.Fatal("token changed across restarts")
		}
		if again, err := os.ReadFile(keyFile); err != nil || string(again) != string(key) {
			t.Fatal("cover URL key changed across restarts: every signed URL would die")
		}
	})
	t.Run("a damaged cover URL key is a startup error", func(t *testing.T) {
		bad := filepath.Join(dir, "bad-state")
		if err := os.MkdirAll(bad, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, content := range []string{"", "not hex\n", "abcd\n"} {
			if err := os.WriteFile(filepath.Join(bad, "cover-url.key"), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			m3 := newTestMain(t, "--state-dir", bad)
			err := m3.Run(context.Background())
			m3.Close()
			if err == nil || !strings.Contains(err.Error(), "cover") {
				t.Fatalf("key %q: Run = %v, want a cover URL key error", content, err)
			}
		}
	})
}

func TestServeRefusesBadDatabase(t *testing.T) {
	t.Setenv("BINDERY_ADMIN_TOKEN", "")
	t.Run("newer schema", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "bindery.db")
		if err := store.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(context.Background(), store.Config{Path: db})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Exec(context.Background(), st, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, 1)`); err != nil {
			t.Fatal(err)
		}
		st.Close()
		m := newTestMain(t, "--state-dir", dir)
		err = m.Run(context.Background())
		m.Close()
		if cli.CodeOf(err) != cli.ExitSchema {
			t.Fatalf("newer schema: %v (exit %d)", err, cli.CodeOf(err))
		}
	})
	t.Run("corrupt file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "bindery.db"), []byte(strings.Repeat("not sqlite ", 500)), 0o600); err != nil {
			t.Fatal(err)
		}
		m := newTestMain(t, "--state-dir", dir)
		err := m.Run(context.Background())
		m.Close()
		if cli.CodeOf(err) != cli.ExitDatabase {
			t.Fatalf("corrupt: %v (exit %d)", err, cli.CodeOf(err))
		}
	})
	t.Run("missing library root", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, roots := range []string{dir + "/absent", dir + "," + dir + "/absent", "relative/path", ",", file} {
			m := newTestMain(t, "--state-dir", dir, "--library-root", roots)
			err := m.Run(context.Background())
			m.Close()
			if cli.CodeOf(err) != cli.ExitUsage || !strings.Contains(err.Error(), "library root") {
				t.Fatalf("roots %q: %v (exit %d), want a library root usage error", roots, err, cli.CodeOf(err))
			}
		}
	})
	t.Run("bad shutdown grace in the environment", func(t *testing.T) {
		t.Setenv("BINDERY_SHUTDOWN_GRACE", "10")
		m := NewMain()
		err := m.ParseFlags([]string{"--state-dir", t.TempDir()})
		if cli.CodeOf(err) != cli.ExitUsage || !strings.Contains(err.Error(), "BINDERY_SHUTDOWN_GRACE=") {
			t.Fatalf("ParseFlags: %v", err)
		}
	})
	t.Run("short token", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("BINDERY_ADMIN_TOKEN", "short")
		m := newTestMain(t, "--state-dir", dir)
		err := m.Run(context.Background())
		m.Close()
		if cli.CodeOf(err) != cli.ExitUsage {
			t.Fatalf("short token: %v", err)
		}
	})
}
