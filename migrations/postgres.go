package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/pressly/goose/v3"

	"github.com/bindery-nas/bindery/protocol"
)

// PostgreSQL (issue 22) starts from one migration that is the whole SQLite
// schema at version 17; from there both engines get every migration under
// the same number. The legacy import and repairs (migrations 1, 3, 11) are
// SQLite's alone: there never were legacy PostgreSQL databases.

//go:embed postgres/*.sql
var postgresFiles embed.FS

// postgresBaseline is the version the PostgreSQL schema starts at.
const postgresBaseline = 17

func postgresProvider(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(postgresFiles, "postgres")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true))
}

// UpPostgres applies every pending PostgreSQL migration. The connection's
// role owns what it creates: run it as the role controld uses.
func UpPostgres(ctx context.Context, db *sql.DB) error {
	p, err := postgresProvider(db)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if current > Latest() {
		return fmt.Errorf("%w: database at %d, binary knows %d; refusing to downgrade", ErrSchemaTooNew, current, Latest())
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// VersionPostgres is the applied migration version of a PostgreSQL
// database, 0 when goose never ran there.
func VersionPostgres(ctx context.Context, db *sql.DB) (int64, error) {
	return appliedVersion(ctx, db, `SELECT to_regclass('goose_db_version') IS NOT NULL`)
}

// CheckPostgres is Check for a PostgreSQL database.
func CheckPostgres(ctx context.Context, db *sql.DB) error {
	v, err := VersionPostgres(ctx, db)
	if err != nil {
		return err
	}
	return checkVersion(v)
}

// ErrBadRole: a worker role name WorkerGrants refuses.
var ErrBadRole = errors.New("worker role")

// roleName is what WorkerGrants accepts as a role: a plain lowercase
// identifier, so that it never needs quoting.
var roleName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// WorkerGrants returns the statements that give role exactly the writes
// protocol §7 allows workerd, the PostgreSQL counterpart of SQLite's
// authorizer: read everything; insert, update and delete the data-plane
// tables; on the leased tables update only the whitelisted columns, and
// insert or delete only where the whitelist says so. Everything else
// (policy columns, settings, libraries, plans, the schema) is refused by
// the server with "permission denied". A DBA can run them by hand
// (controld migrate --print-grants prints them).
func WorkerGrants(role string) ([]string, error) {
	if !roleName.MatchString(role) {
		return nil, fmt.Errorf("%w %q: want a lowercase identifier", ErrBadRole, role)
	}
	stmts := []string{
		"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM " + role,
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + role,
		// Identity columns draw from sequences on insert.
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO " + role,
	}
	for _, t := range protocol.DataPlaneTables {
		stmts = append(stmts, "GRANT INSERT, UPDATE, DELETE ON "+t+" TO "+role)
	}
	tables := make([]string, 0, len(protocol.Whitelist))
	for t := range protocol.Whitelist {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		cols, insert, del, _ := protocol.WritableColumns(t)
		list := make([]string, 0, len(cols))
		for c := range cols {
			list = append(list, c)
		}
		slices.Sort(list)
		if len(list) > 0 {
			stmts = append(stmts, "GRANT UPDATE ("+strings.Join(list, ", ")+") ON "+t+" TO "+role)
		}
		if insert {
			stmts = append(stmts, "GRANT INSERT ON "+t+" TO "+role)
		}
		if del {
			stmts = append(stmts, "GRANT DELETE ON "+t+" TO "+role)
		}
	}
	return stmts, nil
}
