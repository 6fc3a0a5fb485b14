package store

import (
	"context"
	"fmt"
)

// ListAllSeries returns up to limit series of every library with id >
// afterID, in id order (ListSeries is the one-library variant).
func (s *Store) ListAllSeries(ctx context.Context, afterID int64, limit int) ([]Series, error) {
	var out []Series
	err := s.r.SelectContext(ctx, &out, `SELECT `+seriesCols+` FROM series WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list all series: %w", err)
	}
	return out, nil
}
