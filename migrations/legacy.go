package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// legacyTables are the tables an older Bindery (or the DedupFS schema it grew
// from) may already hold, in the order their rows can be copied without
// breaking references.
var legacyTables = []string{
	"libraries", "jobs", "scan_sessions", "scan_errors", "series", "library_files",
	"file_metadata", "thumbnails", "thumbnail_cleanup_jobs", "wal_maintenance_jobs",
	"io_rate_limits", "settings", "workers",
}

// enumColumns lists the protocol's enum columns per table (protocol §3).
var enumColumns = map[string][]string{
	"jobs":                   {"kind", "status", "priority"},
	"scan_sessions":          {"status"},
	"library_files":          {"hash_algorithm", "format"},
	"thumbnails":             {"status", "media_type", "format"},
	"thumbnail_cleanup_jobs": {"status"},
	"wal_maintenance_jobs":   {"requested_mode", "status"},
}

// quarantineLegacy (version 1) moves tables of a pre-goose database aside as
// legacy_<name> and drops their indexes, so that version 2 can create the
// checked schema under the real names; it first proves, with trialImport,
// that the whole import will succeed. On a fresh database it does nothing.
func quarantineLegacy(ctx context.Context, tx *sql.Tx) error {
	legacy := false
	for _, t := range legacyTables {
		legacy = legacy || tableExists(ctx, tx, t)
	}
	if !legacy {
		return nil
	}
	if err := trialImport(ctx, tx); err != nil {
		return err
	}
	return quarantine(ctx, tx)
}

func quarantine(ctx context.Context, tx *sql.Tx) error {
	for _, t := range legacyTables {
		if !tableExists(ctx, tx, t) {
			continue
		}
		idx, err := indexNames(ctx, tx, t)
		if err != nil {
			return err
		}
		for _, name := range idx {
			if _, err := tx.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
				return fmt.Errorf("drop legacy index %s: %w", name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE "%s" RENAME TO "legacy_%s"`, t, t)); err != nil {
			return fmt.Errorf("quarantine %s: %w", t, err)
		}
	}
	return nil
}

// importLegacy (version 3) repairs quarantined rows and copies them into the
// checked tables: enums are lowercased, the single-active mutex of protocol §5
// is restored with a deterministic winner, then rows move across and the
// legacy tables are dropped. Version 4 builds the unique index afterwards.
func importLegacy(ctx context.Context, tx *sql.Tx) error {
	now := time.Now().UTC().Format("2006-01-02 15:04:05.000")
	if err := createRepairLog(ctx, tx); err != nil {
		return err
	}
	for _, t := range legacyTables {
		lt := "legacy_" + t
		if !tableExists(ctx, tx, lt) {
			continue
		}
		if err := normalizeEnums(ctx, tx, t, lt); err != nil {
			return err
		}
		if err := repairLegacy(ctx, tx, t, lt, now); err != nil {
			return err
		}
		if t == "jobs" {
			// The mutex repair writes these; an old jobs table may lack them.
			if err := addMissingColumns(ctx, tx, lt, "worker_id", "worker_heartbeat_at", "lease_expires_at",
				"error_code", "error_message", "updated_at"); err != nil {
				return err
			}
			if err := recoverLegacyMutex(ctx, tx, lt, now); err != nil {
				return err
			}
		}
		if err := copyCommonColumns(ctx, tx, t, lt, now); err != nil {
			return err
		}
	}
	for i := len(legacyTables) - 1; i >= 0; i-- {
		lt := "legacy_" + legacyTables[i]
		if tableExists(ctx, tx, lt) {
			if _, err := tx.ExecContext(ctx, `DROP TABLE "`+lt+`"`); err != nil {
				return fmt.Errorf("drop %s: %w", lt, err)
			}
		}
	}
	return nil
}

func normalizeEnums(ctx context.Context, tx *sql.Tx, t, lt string) error {
	have, err := columns(ctx, tx, lt)
	if err != nil {
		return err
	}
	for _, c := range enumColumns[t] {
		if !have[c] {
			continue
		}
		q := fmt.Sprintf(`UPDATE "%s" SET "%s" = lower("%s") WHERE "%s" <> lower("%s")`, lt, c, c, c, c)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("normalize %s.%s: %w", t, c, err)
		}
	}
	return nil
}

// recoverLegacyMutex keeps one active scan/hash job: the oldest running one
// (created_at, then id), or failing that the oldest pending one. Every other
// active scan/hash row becomes retryable with a recovery code.
func recoverLegacyMutex(ctx context.Context, tx *sql.Tx, lt, now string) error {
	const active = `kind IN ('scan','hash')`
	var winner sql.NullInt64
	q := `SELECT id FROM "` + lt + `" WHERE status = ? AND ` + active + ` ORDER BY created_at, id LIMIT 1`
	if err := tx.QueryRowContext(ctx, q, "running").Scan(&winner); err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("legacy mutex: %w", err)
	}
	demote := `UPDATE "` + lt + `" SET status = 'retryable', error_code = ?, error_message = ?,
		worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL, updated_at = ?
		WHERE status = ? AND ` + active + ` AND id <> ?`
	if _, err := tx.ExecContext(ctx, demote, "migration_mutex_recovery",
		"another scan/hash job was running when the database was migrated", now, "running", winner.Int64); err != nil {
		return fmt.Errorf("legacy mutex running: %w", err)
	}
	if !winner.Valid {
		if err := tx.QueryRowContext(ctx, q, "pending").Scan(&winner); err != nil && err != sql.ErrNoRows {
			return fmt.Errorf("legacy mutex: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, demote, "migration_active_recovery",
		"another scan/hash job was active when the database was migrated", now, "pending", winner.Int64); err != nil {
		return fmt.Errorf("legacy mutex pending: %w", err)
	}
	return nil
}

// copyCommonColumns copies the columns both tables have; created_at and
// updated_at left NULL, and NOT NULL times the legacy table lacks, are
// filled with the migration time. Should a row still break a constraint,
// findBadRow names it.
func copyCommonColumns(ctx context.Context, tx *sql.Tx, t, lt, now string) error {
	have, err := columns(ctx, tx, lt)
	if err != nil {
		return err
	}
	want, err := targetColumns(ctx, tx, t)
	if err != nil {
		return err
	}
	var cols, exprs []string
	var args []any
	for _, tc := range want {
		c := tc.name
		switch {
		case have[c] && (c == "created_at" || c == "updated_at"):
			exprs = append(exprs, `coalesce("`+c+`", ?)`)
			args = append(args, now)
		case have[c]:
			exprs = append(exprs, `"`+c+`"`)
		case tc.notNull && !tc.dflt.Valid && isTimeColumn(c, "TEXT"):
			exprs = append(exprs, "?")
			args = append(args, now)
		default:
			continue
		}
		cols = append(cols, `"`+c+`"`)
	}
	q := fmt.Sprintf(`INSERT INTO "%s" (%s) SELECT %s FROM "%s"`, t,
		strings.Join(cols, ", "), strings.Join(exprs, ", "), lt)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return findBadRow(ctx, tx, t, lt, q, args, fmt.Errorf("import legacy %s: %w", t, err))
	}
	return nil
}

// addMissingColumns adds NULL text columns to a quarantined table (it is
// dropped after the import).
func addMissingColumns(ctx context.Context, tx *sql.Tx, lt string, cols ...string) error {
	have, err := columns(ctx, tx, lt)
	if err != nil {
		return err
	}
	for _, c := range cols {
		if !have[c] {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE "`+lt+`" ADD COLUMN "`+c+`" TEXT`); err != nil {
				return fmt.Errorf("legacy %s: %w", lt, err)
			}
		}
	}
	return nil
}

func tableExists(ctx context.Context, tx *sql.Tx, name string) bool {
	var n int
	_ = tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?", name).Scan(&n)
	return n > 0
}

func indexNames(ctx context.Context, tx *sql.Tx, table string) ([]string, error) {
	return queryStrings(ctx, tx, "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name=? AND sql IS NOT NULL", table)
}

func columnList(ctx context.Context, tx *sql.Tx, table string) ([]string, error) {
	return queryStrings(ctx, tx, "SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
}

// queryStrings returns the one text column of every row of q.
func queryStrings(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("legacy schema: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func columns(ctx context.Context, tx *sql.Tx, table string) (map[string]bool, error) {
	list, err := columnList(ctx, tx, table)
	if err != nil {
		return nil, err
	}
	m := make(map[string]bool, len(list))
	for _, c := range list {
		m[c] = true
	}
	return m, nil
}
