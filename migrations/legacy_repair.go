package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Repairs of legacy rows that the checked schema would refuse. Each is
// deterministic, counted in migration_repairs under its code, and applied
// to the quarantined copy before it is copied across; a row no repair can
// save stops the import with its table, rowid and constraint, and nothing
// is migrated (trialImport).

// targetColumn is a column of the checked table a legacy row moves into.
type targetColumn struct {
	name    string
	notNull bool
	dflt    sql.NullString // the DEFAULT expression, as SQL text
}

func targetColumns(ctx context.Context, tx *sql.Tx, table string) ([]targetColumn, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, "notnull", dflt_value FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, fmt.Errorf("legacy schema: %w", err)
	}
	defer rows.Close()
	var out []targetColumn
	for rows.Next() {
		var c targetColumn
		if err := rows.Scan(&c.name, &c.notNull, &c.dflt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// repairLegacy fixes lt, the quarantined copy of t, in place: NULLs in NOT
// NULL columns take the column's default (migration_null_default) or, for
// times, the migration time (migration_null_time); then the repairs that
// belong to one table.
func repairLegacy(ctx context.Context, tx *sql.Tx, t, lt, now string) error {
	have, err := columns(ctx, tx, lt)
	if err != nil {
		return err
	}
	cols, err := targetColumns(ctx, tx, t)
	if err != nil {
		return err
	}
	for _, c := range cols {
		if !have[c.name] || !c.notNull {
			continue
		}
		q := fmt.Sprintf(`UPDATE "%s" SET "%s" = ? WHERE "%[2]s" IS NULL`, lt, c.name)
		switch {
		case c.dflt.Valid:
			q = fmt.Sprintf(`UPDATE "%s" SET "%s" = (%s) WHERE "%[2]s" IS NULL`, lt, c.name, c.dflt.String)
			err = repair(ctx, tx, 3, t, c.name, "migration_null_default", q)
		case isTimeColumn(c.name, "TEXT"):
			err = repair(ctx, tx, 3, t, c.name, "migration_null_time", q, now)
		default:
			continue // a table-specific repair below, or the row is reported
		}
		if err != nil {
			return err
		}
	}
	switch t {
	case "jobs":
		if have["progress"] {
			// Progress as a percentage (0–100) instead of a fraction.
			err = repair(ctx, tx, 3, t, "progress", "migration_progress_percent",
				`UPDATE "`+lt+`" SET progress = progress / 100.0 WHERE progress > 1 AND progress <= 100`)
		}
	case "thumbnails":
		err = repairLegacyThumbnails(ctx, tx, lt, have, now)
	}
	return err
}

// repairLegacyThumbnails gives rows without a group key their library's,
// rows without an output path the cover cache's default layout (256
// shards) and another render, and keeps one active row per file and format:
// the newest; the others fail with migration_duplicate_active.
func repairLegacyThumbnails(ctx context.Context, tx *sql.Tx, lt string, have map[string]bool, now string) error {
	// The duplicate repair writes these; the quarantined copy gets any it
	// lacks (NULL, and nullable in the checked table).
	if err := addMissingColumns(ctx, tx, lt, "error_code", "error_message", "finished_at",
		"worker_id", "worker_heartbeat_at", "lease_expires_at"); err != nil {
		return err
	}
	if have["group_key"] && have["library_id"] {
		if err := repair(ctx, tx, 3, "thumbnails", "group_key", "migration_null_group_key",
			`UPDATE "`+lt+`" SET group_key = 'library:' || library_id WHERE group_key IS NULL AND library_id IS NOT NULL`); err != nil {
			return err
		}
	}
	if have["output_relpath"] && have["file_id"] {
		format := `'webp'`
		if have["format"] {
			format = `coalesce(format, 'webp')`
		}
		status := ""
		if have["status"] {
			status = `, status = CASE WHEN status IN ('ready', 'running') THEN 'pending' ELSE status END`
		}
		if err := repair(ctx, tx, 3, "thumbnails", "output_relpath", "migration_null_output_path",
			`UPDATE "`+lt+`" SET output_relpath = printf('covers/%03d/%d.', file_id % 256, file_id) || `+format+status+`
			WHERE output_relpath IS NULL AND file_id IS NOT NULL`); err != nil {
			return err
		}
	}
	if !have["status"] || !have["file_id"] {
		return nil
	}
	// The quarantined copy has no indexes; without this one the search for
	// a newer active row of the same file is quadratic.
	if _, err := tx.ExecContext(ctx, `CREATE INDEX "`+lt+`_file" ON "`+lt+`" (file_id)`); err != nil {
		return fmt.Errorf("legacy thumbnails: %w", err)
	}
	same := `b.file_id = "` + lt + `".file_id`
	if have["format"] {
		same += ` AND coalesce(b.format, 'webp') = coalesce("` + lt + `".format, 'webp')`
	}
	return repair(ctx, tx, 3, "thumbnails", "status", "migration_duplicate_active",
		`UPDATE "`+lt+`" SET status = 'failed', error_code = 'migration_duplicate_active',
			error_message = 'another pending or running cover of the same file and format was kept', finished_at = ?,
			worker_id = NULL, worker_heartbeat_at = NULL, lease_expires_at = NULL
		WHERE status IN ('pending', 'running') AND rowid < (SELECT max(b.rowid) FROM "`+lt+`" b
			WHERE `+same+` AND b.status IN ('pending', 'running'))`, now)
}

// findBadRow is called when a table's rows could not be copied: it copies
// them one at a time inside a savepoint, to name the first that fails and
// why, then undoes the attempt.
func findBadRow(ctx context.Context, tx *sql.Tx, t, lt, insert string, args []any, cause error) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT legacy_probe`); err != nil {
		return cause
	}
	defer tx.ExecContext(ctx, `ROLLBACK TO legacy_probe; RELEASE legacy_probe`)
	rowids, err := queryStrings(ctx, tx, `SELECT CAST(rowid AS TEXT) FROM "`+lt+`" ORDER BY rowid`)
	if err != nil {
		return cause
	}
	for _, id := range rowids {
		if _, err := tx.ExecContext(ctx, insert+` WHERE rowid = `+id, args...); err != nil {
			return fmt.Errorf("legacy %s row (rowid %s) cannot be repaired: %v; the database was left as it was", t, id, err)
		}
	}
	return cause
}

// trialImport runs the whole legacy import (quarantine, schema, repairs,
// copy, single-active index) inside a savepoint and undoes it. Goose runs
// each migration in its own transaction, so a failure in the import
// (migration 3) would otherwise leave the database at version 2 with its
// tables renamed; run first, in migration 1, the trial makes such a
// database fail before anything is changed.
func trialImport(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT legacy_trial`); err != nil {
		return fmt.Errorf("legacy trial: %w", err)
	}
	err := func() error {
		if err := quarantine(ctx, tx); err != nil {
			return err
		}
		for _, file := range []string{"00002_schema.sql", "00004_single_active_index.sql"} {
			if file == "00004_single_active_index.sql" {
				if err := importLegacy(ctx, tx); err != nil {
					return err
				}
			}
			up, err := upSection(file)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, up); err != nil {
				return fmt.Errorf("legacy trial %s: %w", file, err)
			}
		}
		return nil
	}()
	if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO legacy_trial; RELEASE legacy_trial`); rerr != nil && err == nil {
		err = fmt.Errorf("legacy trial: %w", rerr)
	}
	return err
}

// upSection is the Up part of an embedded SQL migration.
func upSection(file string) (string, error) {
	b, err := sqlFiles.ReadFile(file)
	if err != nil {
		return "", err
	}
	s := string(b)
	if i := strings.Index(s, "-- +goose Down"); i >= 0 {
		s = s[:i]
	}
	return s, nil
}
