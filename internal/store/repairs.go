package store

import (
	"context"
	"fmt"
)

// MigrationRepair counts the rows one data migration repaired in one
// column, under one code (migration_repairs; docs/PROTOCOL.md §2, §5).
type MigrationRepair struct {
	Version int64  `db:"version"`
	Table   string `db:"table_name"`
	Column  string `db:"column_name"`
	Code    string `db:"code"`
	Rows    int64  `db:"rows"`
}

// MigrationRepairs lists what the migrations repaired, in the order they
// did it.
func (s *Store) MigrationRepairs(ctx context.Context) ([]MigrationRepair, error) {
	out := []MigrationRepair{}
	if s.dialect == dialectPostgres {
		return out, nil // the repairs are of legacy SQLite rows (PROTOCOL.md §2)
	}
	err := s.r.SelectContext(ctx, &out, `SELECT version, table_name, column_name, code, rows FROM migration_repairs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("migration repairs: %w", err)
	}
	return out, nil
}
