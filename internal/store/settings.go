package store

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Settings returns every stored setting. Keys never written are absent;
// the settings package merges its defaults.
func (s *Store) Settings(ctx context.Context) (map[string]string, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT key, value FROM settings")
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
		out[k] = v
	}
	return out, rows.Err()
}

// PutSettings writes every pair in one transaction: all or nothing.
// Validation is the caller's (the settings package).
func (s *Store) PutSettings(ctx context.Context, kv map[string]string) error {
	now := s.nowText()
	return s.write(ctx, func(tx *sqlx.Tx) error {
		for k, v := range kv {
			_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
				ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, k, v, now)
			if err != nil {
				return fmt.Errorf("put setting %s: %w", k, err)
			}
		}
		return nil
	})
}
