package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/bindery-nas/bindery/internal/pgtest"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/migrations"
)

// EngineVar selects the engine the store's test suites run against:
// "postgres" runs them on a private PostgreSQL server (internal/pgtest);
// anything else, or unset, on SQLite files. make test runs both.
const EngineVar = "BINDERY_TEST_DB"

// Postgres reports whether this test binary runs on PostgreSQL.
func Postgres() bool { return os.Getenv(EngineVar) == "postgres" }

// Main runs a package's tests and then stops the PostgreSQL server they
// may have started; call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// SkipOnPostgres skips a test that does not run on PostgreSQL yet, saying
// why. Issue 22 tracks each one; the list only shrinks.
func SkipOnPostgres(tb testing.TB, why string) {
	tb.Helper()
	if Postgres() {
		tb.Skip("not on PostgreSQL yet: " + why)
	}
}

// mustMigratePostgres makes a database migrated by its owner (the
// superuser, standing in for controld's role), with the worker role of the
// test binary holding exactly the grants controld migrate gives workerd.
func mustMigratePostgres(tb testing.TB) string {
	tb.Helper()
	name := pgtest.NewDatabaseFrom(tb, migratedTemplate(tb))
	return pgtest.Shared(tb).URL(name, pgtest.Superuser)
}

var template struct {
	once sync.Once
	name string
	err  error
}

// migratedTemplate is a database migrated once per test binary, with the
// worker role's grants, which each test's database copies: a test's
// database then costs a CREATE DATABASE … TEMPLATE instead of the
// migrations and some fifty GRANTs.
func migratedTemplate(tb testing.TB) string {
	tb.Helper()
	template.once.Do(func() { template.name, template.err = makeTemplate(pgtest.Shared(tb)) })
	if template.err != nil {
		tb.Fatalf("migrated template: %v", template.err)
	}
	return template.name
}

func makeTemplate(srv *pgtest.Server) (string, error) {
	ctx := context.Background()
	name := fmt.Sprintf("migrated_%d", os.Getpid())
	if err := srv.Exec(ctx, "postgres", "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	if err := store.Migrate(ctx, srv.URL(name, pgtest.Superuser)); err != nil {
		return "", err
	}
	grants, err := migrations.WorkerGrants(workerRole())
	if err != nil {
		return "", err
	}
	stmts := append([]string{"DROP ROLE IF EXISTS " + workerRole(), "CREATE ROLE " + workerRole() + " LOGIN"}, grants...)
	return name, srv.Exec(ctx, name, stmts...)
}

// workerRole is the test binary's workerd role (roles are the server's, so
// every database copied from the template grants it the same).
func workerRole() string { return fmt.Sprintf("worker_%d", os.Getpid()) }

// workerURL is raw with the database's worker role as its user.
func workerURL(tb testing.TB, raw string) string {
	tb.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		tb.Fatal(err)
	}
	u.User = url.User(workerRole())
	return u.String()
}

// TimeText is SQL rendering the time column col as the protocol's text
// (protocol.FormatTime), on either engine: tests compare rows as text.
func TimeText(col string) string {
	if Postgres() {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')"
	}
	return col
}

// Hex is SQL rendering the blob column col as upper-case hex (SQLite's
// hex; PostgreSQL's encode), NULL as ”.
func Hex(col string) string {
	if Postgres() {
		return "coalesce(upper(encode(" + col + ", 'hex')), '')"
	}
	return "hex(" + col + ")"
}

// Concat is SQL joining expr over the rows with sep, in order: SQLite's
// group_concat, PostgreSQL's string_agg.
func Concat(expr, sep, order string) string {
	if Postgres() {
		return "string_agg(" + expr + ", '" + sep + "' ORDER BY " + order + ")"
	}
	return "group_concat(" + expr + ", '" + sep + "')"
}

// JSONTrue is SQL testing that the JSON text column col has key set to 1
// (or true), on either engine.
func JSONTrue(col, key string) string {
	if Postgres() {
		return "(" + col + "::jsonb ->> '" + key + "') IN ('1', 'true')"
	}
	return "json_extract(" + col + ", '$." + key + "') = 1"
}

// TablesSQL lists the database's own tables by name, on either engine. On
// SQLite the FTS4 search tables (migration 26) are left out: their rows are
// in their shadow tables (book_search_content, …), which are listed.
func TablesSQL() string {
	if Postgres() {
		return `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`
	}
	return `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
		AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name`
}

// WorkerDB is what BINDERY_DB holds for a workerd process on the database
// MustMigrate returned: the same path on SQLite, the URL with the worker
// role on PostgreSQL (workerd refuses the owner's role).
func WorkerDB(tb testing.TB, path string) string {
	tb.Helper()
	if Postgres() {
		return workerURL(tb, path)
	}
	return path
}

// NowSQL is SQL for the current time as a third party writes it into a
// time column, on either engine.
func NowSQL() string {
	if Postgres() {
		return "now()"
	}
	return "strftime('%Y-%m-%d %H:%M:%f','now')"
}
