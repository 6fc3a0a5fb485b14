package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/pgtest"
)

// runMigrate runs "controld migrate --db path [flags]" and returns its
// output and exit code.
func runMigrate(t *testing.T, path string, flags ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd := newMigrateCommand()
	cmd.SetOut(&out)
	cmd.SetArgs(append([]string{"--db", path}, flags...))
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		out.WriteString(err.Error())
	}
	return out.String(), cli.CodeOf(err)
}

func legacyDB(t *testing.T, rows string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "legacy.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE jobs (id INTEGER PRIMARY KEY, kind TEXT, status TEXT, payload TEXT, created_at TEXT, updated_at TEXT);` + rows); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMigrateLegacy: controld migrate prints what it repaired, and names
// the row it could not repair, leaving that database as it was.
func TestMigrateLegacy(t *testing.T) {
	t.Run("repairs are printed", func(t *testing.T) {
		out, code := runMigrate(t, legacyDB(t, `INSERT INTO jobs VALUES (1, 'SCAN', 'COMPLETED', NULL, '2024-01-01T00:00:00Z', NULL)`))
		for _, want := range []string{"schema version", "jobs.payload migration_null_default, 1 rows",
			"jobs.updated_at migration_null_time, 1 rows", "jobs.created_at migration_time_canonicalized, 1 rows"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, output lacks %q:\n%s", code, want, out)
			}
		}
	})
	t.Run("an unrepairable row is named", func(t *testing.T) {
		path := legacyDB(t, `INSERT INTO jobs VALUES (7, 'bogus', 'completed', '{}', '2024-01-01 00:00:00.000', '2024-01-01 00:00:00.000')`)
		out, code := runMigrate(t, path)
		if code != cli.ExitDatabase || !strings.Contains(out, "legacy jobs row (rowid 7) cannot be repaired") {
			t.Fatalf("exit %d: %s", code, out)
		}
		db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var tables string
		if err := db.QueryRow(`SELECT group_concat(name) FROM sqlite_master WHERE type = 'table' AND name <> 'sqlite_sequence'`).Scan(&tables); err != nil || tables != "jobs" {
			t.Fatalf("tables after the refusal: %q %v", tables, err)
		}
	})
}

// TestMigrateToPostgres: the PostgreSQL flags of controld migrate, and
// their bad forms. (TestCopyToPostgres checks the copy row by row.)
func TestMigrateToPostgres(t *testing.T) {
	sqlite := filepath.Join(t.TempDir(), "bindery.db")
	if out, code := runMigrate(t, sqlite); code != 0 {
		t.Fatalf("migrate the SQLite file: exit %d\n%s", code, out)
	}
	srv := pgtest.Shared(t)
	url := srv.URL(pgtest.NewDatabase(t), pgtest.Superuser)
	role := fmt.Sprintf("w_migrate_%d", os.Getpid())
	t.Cleanup(func() { _ = srv.Exec(context.Background(), "postgres", "DROP ROLE IF EXISTS "+role) })

	out, code := runMigrate(t, url, "--from", "sqlite://"+sqlite, "--worker-role", role)
	if code != 0 || !strings.Contains(out, "copied library_files: 0 rows") || !strings.Contains(out, "worker role "+role) {
		t.Fatalf("--from and --worker-role: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		name  string
		db    string
		flags []string
		code  int
		want  string
	}{
		{"a bad role name", url, []string{"--worker-role", "Bad-Role"}, cli.ExitUsage, "want a lowercase identifier"},
		{"roles on SQLite", sqlite, []string{"--worker-role", role}, cli.ExitUsage, "not a PostgreSQL database"},
		{"a copy into SQLite", sqlite, []string{"--from", sqlite}, cli.ExitUsage, "not a PostgreSQL database"},
		{"a missing source", url, []string{"--from", filepath.Join(t.TempDir(), "none.db")}, cli.ExitDatabase, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if out, code := runMigrate(t, c.db, c.flags...); code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, c.code, c.want, out)
			}
		})
	}
	t.Run("the worker role's password", func(t *testing.T) { workerPasswords(t, srv, url, role) })
	t.Run("grants printed for a DBA", func(t *testing.T) {
		var out bytes.Buffer
		cmd := newMigrateCommand()
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"--print-grants", "bindery_worker"})
		if err := cmd.ExecuteContext(context.Background()); err != nil ||
			!strings.Contains(out.String(), "GRANT UPDATE (") || !strings.Contains(out.String(), "CREATE ROLE bindery_worker LOGIN;") {
			t.Fatalf("%v\n%s", err, out.String())
		}
	})
}

// workerPasswords: --worker-role sets the password given by
// BINDERY_WORKER_PASSWORD or --worker-password-file on every run (quotes
// and all), keeps it when none is given, and refuses the password's bad
// forms before touching the database.
func workerPasswords(t *testing.T, srv *pgtest.Server, url, role string) {
	stored := func() string {
		t.Helper()
		db, err := sql.Open("pgx", srv.DSN("postgres", pgtest.Superuser))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.QueryRow(`SELECT coalesce(rolpassword, '') FROM pg_authid WHERE rolname = $1`, role).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	migrateOK := func(flags ...string) {
		t.Helper()
		if out, code := runMigrate(t, url, append([]string{"--worker-role", role}, flags...)...); code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
	}
	t.Setenv("BINDERY_WORKER_PASSWORD", `it's "quoted"; DROP ROLE x`)
	migrateOK()
	first := stored()
	if !strings.HasPrefix(first, "SCRAM-SHA-256$") {
		t.Fatalf("the role's password after BINDERY_WORKER_PASSWORD: %q, want a SCRAM verifier", first)
	}
	t.Setenv("BINDERY_WORKER_PASSWORD", "")
	migrateOK()
	if again := stored(); again != first {
		t.Fatalf("a run without a password changed the role's password")
	}
	file := filepath.Join(t.TempDir(), "worker.password")
	if err := os.WriteFile(file, []byte("another one\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	migrateOK("--worker-password-file", file)
	if changed := stored(); changed == first || !strings.HasPrefix(changed, "SCRAM-SHA-256$") {
		t.Fatalf("the password from the file was not set: %q", changed)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, env string
		flags     []string
		want      string
	}{
		{"without a role", "pw", nil, "without --worker-role"},
		{"twice", "pw", []string{"--worker-role", role, "--worker-password-file", file}, "give one"},
		{"a missing file", "", []string{"--worker-role", role, "--worker-password-file", file + ".none"}, "no such file"},
		{"an empty first line", "", []string{"--worker-role", role, "--worker-password-file", empty}, "the first line is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("BINDERY_WORKER_PASSWORD", c.env)
			if out, code := runMigrate(t, url, c.flags...); code != cli.ExitUsage || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, cli.ExitUsage, c.want, out)
			}
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}
