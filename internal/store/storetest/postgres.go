package storetest

import (
	"context"
	"net/url"
	"os"
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
// superuser, standing in for controld's role) with a worker role holding
// exactly the grants controld migrate gives workerd.
func mustMigratePostgres(tb testing.TB) string {
	tb.Helper()
	srv := pgtest.Shared(tb)
	name := pgtest.NewDatabase(tb)
	ctx := context.Background()
	raw := srv.URL(name, pgtest.Superuser)
	if err := store.Migrate(ctx, raw); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	role := workerRole(name)
	grants, err := migrations.WorkerGrants(role)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Exec(ctx, name, append([]string{"CREATE ROLE " + role + " LOGIN"}, grants...)...); err != nil {
		tb.Fatalf("worker role: %v", err)
	}
	tb.Cleanup(func() {
		_ = srv.Exec(ctx, name, "DROP OWNED BY "+role)
		_ = srv.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)", "DROP ROLE IF EXISTS "+role)
	})
	return raw
}

func workerRole(database string) string { return "w_" + database }

// workerURL is raw with the database's worker role as its user.
func workerURL(tb testing.TB, raw string) string {
	tb.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		tb.Fatal(err)
	}
	u.User = url.User(workerRole(u.Path[1:]))
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

// TablesSQL lists the database's own tables by name, on either engine.
func TablesSQL() string {
	if Postgres() {
		return `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`
	}
	return `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
}
