package store

import (
	"context"
	"database/sql"
	"fmt"
)

// ConnPragmas are the pragmas of one pooled connection, as SQLite reports
// them.
type ConnPragmas struct {
	JournalMode   string
	ForeignKeys   int
	BusyTimeoutMS int
	Synchronous   int
	// CacheSize is the page cache: negative in KiB, positive in pages.
	CacheSize int
}

// ConnectionPragmas reads the pragmas of the writer connection and of n
// reader connections held open at the same time, proving that the DSN (not
// a one-off Exec) configured each of them.
func (s *Store) ConnectionPragmas(ctx context.Context, n int) ([]ConnPragmas, error) {
	conns := []*sql.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	w, err := s.w.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("pragmas: %w", err)
	}
	conns = append(conns, w)
	for i := 0; i < n; i++ {
		c, err := s.r.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("pragmas: %w", err)
		}
		conns = append(conns, c)
	}
	out := make([]ConnPragmas, 0, len(conns))
	for _, c := range conns {
		var p ConnPragmas
		err := c.QueryRowContext(ctx, `SELECT (SELECT journal_mode FROM pragma_journal_mode),
			(SELECT foreign_keys FROM pragma_foreign_keys), (SELECT timeout FROM pragma_busy_timeout),
			(SELECT synchronous FROM pragma_synchronous), (SELECT cache_size FROM pragma_cache_size)`).Scan(
			&p.JournalMode, &p.ForeignKeys, &p.BusyTimeoutMS, &p.Synchronous, &p.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("pragmas: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}
