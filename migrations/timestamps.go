package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// canonicalTime is the GLOB every stored timestamp matches: protocol
// TimeLayout, "YYYY-MM-DD HH:MM:SS.SSS" in UTC. It is the cheap test the
// triggers run on every write; what fails it is rewritten with canonTime.
const canonicalTime = `[12][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9].[0-9][0-9][0-9]`

// canonTime is the SQL that reads any time SQLite understands (ISO 8601
// with "T", "Z" or an offset, any number of fractional digits, or none:
// what Python's isoformat() and datetime('now') write) and spells it
// canonically, or NULL for text that is no time. Numbers are refused (a TEXT
// column stores them as digits): SQLite would read them as Julian days,
// never as the Unix seconds a writer meant.
func canonTime(col string) string {
	return fmt.Sprintf(`CASE WHEN typeof(%[1]s) = 'text' AND %[1]s GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
		THEN strftime('%%Y-%%m-%%d %%H:%%M:%%f', %[1]s) END`, col)
}

// isTimeColumn: the protocol names every time column *_at, *_after or
// *_since, and stores it as TEXT.
func isTimeColumn(name, typ string) bool {
	return strings.EqualFold(typ, "TEXT") &&
		(strings.HasSuffix(name, "_at") || strings.HasSuffix(name, "_after") || strings.HasSuffix(name, "_since"))
}

// canonicalTimes is migration 11. Third parties write the job tables too
// (protocol §2), and a time in another spelling broke keyset paging and
// stalled checkpoint scheduling. Every time column now gets triggers that
// rewrite a readable time into the canonical spelling and refuse anything
// else, so readers can rely on TimeLayout; existing rows are repaired first.
func canonicalTimes(ctx context.Context, tx *sql.Tx) error {
	if err := createRepairLog(ctx, tx); err != nil {
		return err
	}
	tables, err := timeColumns(ctx, tx)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Format("2006-01-02 15:04:05.000")
	for _, t := range tables {
		if err := repairTimes(ctx, tx, t, now); err != nil {
			return err
		}
		if err := createTimeTriggers(ctx, tx, t); err != nil {
			return err
		}
	}
	return nil
}

// timeTable is a table with its time columns; notNull marks the columns
// that cannot be emptied when their value is unreadable.
type timeTable struct {
	name    string
	cols    []string
	notNull map[string]bool
}

func timeColumns(ctx context.Context, tx *sql.Tx) ([]timeTable, error) {
	names, err := queryStrings(ctx, tx, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name NOT IN ('goose_db_version', 'migration_repairs') ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var out []timeTable
	for _, n := range names {
		rows, err := tx.QueryContext(ctx, `SELECT name, type, "notnull" FROM pragma_table_info(?) ORDER BY cid`, n)
		if err != nil {
			return nil, fmt.Errorf("time columns of %s: %w", n, err)
		}
		t := timeTable{name: n, notNull: map[string]bool{}}
		for rows.Next() {
			var col, typ string
			var notNull bool
			if err := rows.Scan(&col, &typ, &notNull); err != nil {
				rows.Close()
				return nil, err
			}
			if isTimeColumn(col, typ) {
				t.cols = append(t.cols, col)
				t.notNull[col] = notNull
			}
		}
		rows.Close()
		if len(t.cols) > 0 {
			out = append(out, t)
		}
	}
	return out, nil
}

// repairTimes rewrites every stored time that is not canonical: a readable
// one in the canonical spelling (migration_time_canonicalized), an
// unreadable one to NULL, or to the migration time where the column is NOT
// NULL (migration_time_unreadable). Each repair is counted in
// migration_repairs.
func repairTimes(ctx context.Context, tx *sql.Tx, t timeTable, now string) error {
	for _, c := range t.cols {
		col := `"` + c + `"`
		bad := fmt.Sprintf(`%s IS NOT NULL AND (typeof(%[1]s) <> 'text' OR %[1]s NOT GLOB '%s')`, col, canonicalTime)
		fix := fmt.Sprintf(`UPDATE "%s" SET %s = %s WHERE %s AND %[3]s IS NOT NULL`, t.name, col, canonTime(col), bad)
		if err := repair(ctx, tx, 11, t.name, c, "migration_time_canonicalized", fix); err != nil {
			return err
		}
		var fallback any // NULL
		if t.notNull[c] {
			fallback = now
		}
		if err := repair(ctx, tx, 11, t.name, c, "migration_time_unreadable",
			fmt.Sprintf(`UPDATE "%s" SET %s = ? WHERE %s`, t.name, col, bad), fallback); err != nil {
			return err
		}
	}
	return nil
}

// createTimeTriggers makes the database keep t's times canonical: after an
// insert, or an update of the column, that leaves a time outside the
// canonical GLOB, the value is rewritten with canonTime, or the statement is
// aborted when it is no time at all. The GLOB is all a canonical write
// costs.
//
// There is one trigger per column and event, not one per table, because
// workerd's authorizer (protocol §7) also judges the statements of the
// triggers its writes fire: a trigger that rewrote every time column of a
// row would need the right to write columns workerd may not touch. A
// per-column trigger writes only the column the statement itself wrote.
func createTimeTriggers(ctx context.Context, tx *sql.Tx, t timeTable) error {
	for _, c := range t.cols {
		nc := `NEW."` + c + `"`
		when := fmt.Sprintf(`%s IS NOT NULL AND (typeof(%[1]s) <> 'text' OR %[1]s NOT GLOB '%s')`, nc, canonicalTime)
		body := fmt.Sprintf(`    SELECT RAISE(ABORT, '%s.%s: not a time; want YYYY-MM-DD HH:MM:SS.SSS in UTC (ISO 8601 is rewritten)')
     WHERE %s IS NULL;
    UPDATE "%[1]s" SET "%[2]s" = %s WHERE rowid = NEW.rowid;`, t.name, c, canonTime(nc), canonTime(`"`+c+`"`))
		name := "tr_time_" + t.name + "_" + c
		for _, stmt := range []string{
			fmt.Sprintf("CREATE TRIGGER %s_insert AFTER INSERT ON \"%s\"\nWHEN %s\nBEGIN\n%s\nEND", name, t.name, when, body),
			fmt.Sprintf("CREATE TRIGGER %s_update AFTER UPDATE OF \"%s\" ON \"%s\"\nWHEN %s\nBEGIN\n%s\nEND", name, c, t.name, when, body),
		} {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("time triggers of %s.%s: %w", t.name, c, err)
			}
		}
	}
	return nil
}

// createRepairLog makes migration_repairs, where the data migrations count
// what they repaired: one row per migration, table, column and code.
func createRepairLog(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migration_repairs (
    id          INTEGER PRIMARY KEY,
    version     INTEGER NOT NULL,
    table_name  TEXT    NOT NULL,
    column_name TEXT    NOT NULL DEFAULT '',
    code        TEXT    NOT NULL CHECK (code GLOB 'migration_[a-z_]*'),
    rows        INTEGER NOT NULL CHECK (rows > 0),
    detail      TEXT    NOT NULL DEFAULT ''
)`)
	if err != nil {
		return fmt.Errorf("migration_repairs: %w", err)
	}
	return nil
}

// repair runs one repairing statement and logs how many rows it changed.
func repair(ctx context.Context, tx *sql.Tx, version int, table, column, code, stmt string, args ...any) error {
	res, err := tx.ExecContext(ctx, stmt, args...)
	if err != nil {
		return fmt.Errorf("%s %s.%s: %w", code, table, column, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO migration_repairs (version, table_name, column_name, code, rows) VALUES (?, ?, ?, ?, ?)`,
		version, table, column, code, n)
	if err != nil {
		return fmt.Errorf("migration_repairs: %w", err)
	}
	return nil
}
