package checks

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/protocol"
)

// CheckDigests: every present file's stored digest is the digest of its
// bytes on disk now. A zombie's late hash write (a digest of bytes it read
// before the file was rewritten) would break it even where size and mtime
// were kept; the lease fence refuses such writes.
func CheckDigests(ctx context.Context, db *sql.DB) Check {
	c := Check{Name: "every stored digest is the digest of the file's bytes on disk"}
	rows, err := db.QueryContext(ctx, `SELECT l.path, f.relative_path, f.hash_algorithm, f.content_hash
		FROM library_files f JOIN libraries l ON l.id = f.library_id
		WHERE f.is_missing = 0 AND f.content_hash IS NOT NULL ORDER BY f.id`)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer rows.Close()
	n := 0
	var bad []string
	for rows.Next() {
		var lib, rel, alg string
		var stored []byte
		if err := rows.Scan(&lib, &rel, &alg, &stored); err != nil {
			c.Detail = err.Error()
			return c
		}
		n++
		got, err := hashing.File(ctx, filepath.Join(lib, rel), protocol.HashAlgorithm(alg))
		if err != nil || !bytes.Equal(got, stored) {
			bad = append(bad, fmt.Sprintf("%s (%v)", rel, err))
		}
	}
	if err := rows.Err(); err != nil {
		c.Detail = err.Error()
		return c
	}
	c.OK = n > 0 && len(bad) == 0
	c.Detail = fmt.Sprintf("%d digests, %d wrong", n, len(bad))
	if len(bad) > 0 {
		c.Detail += ": " + strings.Join(bad[:min(len(bad), 5)], ", ")
	}
	return c
}
