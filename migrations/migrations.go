// Package migrations holds Bindery's numbered schema migrations, embedded in
// the binaries and applied with goose. SQL files carry the schema; Go
// migrations repair data that SQL alone cannot (legacy databases written
// before the protocol's CHECK constraints existed).
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

//go:embed *.sql
var sqlFiles embed.FS

// ErrSchemaTooNew means the database was migrated by a newer Bindery.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// ErrSchemaTooOld means the database has migrations this binary knows but
// which have not been applied.
var ErrSchemaTooOld = errors.New("database schema is older than this binary")

// goMigrations are the migrations written in Go; the rest are SQL files.
func goMigrations() []*goose.Migration {
	return []*goose.Migration{
		goose.NewGoMigration(1, &goose.GoFunc{RunTx: quarantineLegacy}, nil),
		goose.NewGoMigration(3, &goose.GoFunc{RunTx: importLegacy}, nil),
		goose.NewGoMigration(9, &goose.GoFunc{RunTx: addSortKeys}, nil),
		goose.NewGoMigration(11, &goose.GoFunc{RunTx: canonicalTimes}, nil),
		goose.NewGoMigration(14, &goose.GoFunc{RunTx: addFileRoles}, nil),
		goose.NewGoMigration(16, &goose.GoFunc{RunTx: addDeletePlans}, nil),
		goose.NewGoMigration(17, &goose.GoFunc{RunTx: addVideo}, nil),
		goose.NewGoMigration(20, &goose.GoFunc{RunTx: addDeleteSafety}, nil),
		goose.NewGoMigration(22, &goose.GoFunc{RunTx: addReaders}, nil),
		goose.NewGoMigration(28, &goose.GoFunc{RunTx: addSameBookPlans}, nil),
	}
}

func provider(db *sql.DB) (*goose.Provider, error) {
	return goose.NewProvider(goose.DialectSQLite3, db, sqlFiles,
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(goMigrations()...),
	)
}

// Latest is the schema version this binary was built with: the highest
// numbered migration, SQL or Go.
func Latest() int64 {
	var latest int64
	for _, m := range goMigrations() {
		latest = max(latest, m.Version)
	}
	entries, _ := fs.ReadDir(sqlFiles, ".")
	for _, e := range entries {
		if v, err := goose.NumericComponent(e.Name()); err == nil {
			latest = max(latest, v)
		}
	}
	return latest
}

// Up applies every pending migration. db must have foreign keys disabled:
// table rebuilds of legacy data would otherwise cascade.
func Up(ctx context.Context, db *sql.DB) error {
	current, err := Version(ctx, db)
	if err != nil {
		return err
	}
	if current > Latest() {
		return fmt.Errorf("%w: database at %d, binary knows %d; refusing to downgrade", ErrSchemaTooNew, current, Latest())
	}
	p, err := provider(db)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		if current == 0 {
			// A legacy import refused by its trial changed nothing but
			// goose's version table: take that away too.
			_, _ = db.ExecContext(ctx, `DROP TABLE IF EXISTS goose_db_version`)
		}
		return fmt.Errorf("migrate: %w", err)
	}
	var problems int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&problems); err != nil {
		return fmt.Errorf("foreign key check: %w", err)
	}
	if problems > 0 {
		return fmt.Errorf("migrate: %d rows violate foreign keys after migration", problems)
	}
	return nil
}

// Version reads the applied schema version without creating anything: 0 for
// a database goose has never touched.
func Version(ctx context.Context, db *sql.DB) (int64, error) {
	return appliedVersion(ctx, db,
		`SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version')`)
}

// appliedVersion is goose's newest applied version, 0 when the engine's
// exists query says goose's table is not there.
func appliedVersion(ctx context.Context, db *sql.DB, exists string) (int64, error) {
	var there bool
	if err := db.QueryRowContext(ctx, exists).Scan(&there); err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	if !there {
		return 0, nil
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&v); err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v.Int64, nil
}

// Check returns nil only when the database is exactly at Latest.
func Check(ctx context.Context, db *sql.DB) error {
	v, err := Version(ctx, db)
	if err != nil {
		return err
	}
	return checkVersion(v)
}

func checkVersion(v int64) error {
	switch {
	case v > Latest():
		return fmt.Errorf("%w: database at %d, binary knows %d", ErrSchemaTooNew, v, Latest())
	case v < Latest():
		return fmt.Errorf("%w: database at %d, binary needs %d (run controld migrate)", ErrSchemaTooOld, v, Latest())
	}
	return nil
}
