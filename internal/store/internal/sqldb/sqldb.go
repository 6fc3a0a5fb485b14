// Package sqldb is the plumbing the store's packages share: the two pools of
// an open database, its engine, its clock and write transactions that run
// again when they lose a race, the store's application errors and its
// not-found rows. Package store opens the database and hands it out
// through Of; Go's internal rule keeps every package outside internal/store
// from importing this one, so only the store's packages speak SQL.
package sqldb

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/protocol"
)

// DB is an open database as the store's packages use it.
type DB struct {
	// W is the writer pool (one connection on SQLite), R the readers'.
	W, R *sqlx.DB
	// Postgres: the database is PostgreSQL, not SQLite.
	Postgres bool
	// Now is the store's clock, truncated to the protocol's milliseconds.
	Now func() time.Time
	// ListenURL is, on PostgreSQL, the URL a dedicated LISTEN connection
	// opens (the store's own, password from the environment); "" on SQLite.
	ListenURL string
	// Write runs fn in one write transaction, again while it loses races
	// (SQLITE_BUSY, serialization failures); fn must be safe to run again.
	Write func(ctx context.Context, fn func(tx *sqlx.Tx) error) error
	// WriteClaim is Write at the isolation of the claims whose statement
	// locks the row it takes (FOR UPDATE SKIP LOCKED): READ COMMITTED on
	// PostgreSQL, where such claims never abort one another.
	WriteClaim func(ctx context.Context, fn func(tx *sqlx.Tx) error) error
	// WriteOne runs fn, which issues exactly one statement, as a write: on
	// SQLite a write transaction as every write, on PostgreSQL the
	// statement alone at READ COMMITTED, without BEGIN and COMMIT (package
	// leases says why that is safe for its statements).
	WriteOne func(ctx context.Context, fn func(q sqlx.ExtContext) error) error
}

// NowText is Now as the protocol writes it in a column.
func (d *DB) NowText() string { return protocol.FormatTime(d.Now()) }

// Of returns the DB of st, a *store.Store; package store sets it when it
// loads.
var Of func(st any) *DB

// Pick is the SQL of d's engine: sqlite on SQLite, postgres on PostgreSQL.
func (d *DB) Pick(sqlite, postgres string) string {
	if d.Postgres {
		return postgres
	}
	return sqlite
}

// Explain returns the details of SQLite's query plan of q.
func (d *DB) Explain(ctx context.Context, q string, args []any) ([]string, error) {
	rows, err := d.R.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, err
		}
		plan = append(plan, detail)
	}
	return plan, rows.Err()
}
