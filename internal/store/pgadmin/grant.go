package pgadmin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/migrations"
)

// ErrNotPostgres: an operation that exists only on PostgreSQL (worker
// roles, the copy from SQLite) was asked of something else.
var ErrNotPostgres = errors.New("not a PostgreSQL database (a postgres:// URL)")

// GrantWorker makes role, as the URL's role (controld's, which owns the
// schema), a login role holding exactly the writes protocol §7 allows
// workerd (migrations.WorkerGrants). It may be run again: the grants are
// set anew. A non-empty password becomes the role's (again on every run,
// so a changed password takes effect); an empty one leaves the role's
// password as it is, the DBA's to set.
func GrantWorker(ctx context.Context, raw, role, password string) error {
	if !store.IsPostgres(raw) {
		return fmt.Errorf("worker role: %w: on SQLite workerd's writes are checked by its own connections", ErrNotPostgres)
	}
	grants, err := migrations.WorkerGrants(role)
	if err != nil {
		return err
	}
	u, err := store.PostgresURL(raw, false)
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", u)
	if err != nil {
		return fmt.Errorf("grant worker: %w", err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
		return fmt.Errorf("grant worker: %w", err)
	}
	stmts := grants
	if !exists {
		stmts = append([]string{"CREATE ROLE " + role + " LOGIN"}, grants...)
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("grant worker %s: %s: %w", role, q, err)
		}
	}
	if password == "" {
		return nil
	}
	// The server quotes the secret (format's %L): it is never spliced into
	// SQL here, and never appears in an error.
	secret := password
	if v, ok := scramVerifier(password); ok {
		secret = v
	}
	var alter string
	if err := db.QueryRowContext(ctx, `SELECT format('ALTER ROLE %I PASSWORD %L', $1::text, $2::text)`, role, secret).Scan(&alter); err != nil {
		return fmt.Errorf("grant worker %s: password: %w", role, err)
	}
	if _, err := db.ExecContext(ctx, alter); err != nil {
		return fmt.Errorf("grant worker %s: set its password: %w", role, err)
	}
	return nil
}
