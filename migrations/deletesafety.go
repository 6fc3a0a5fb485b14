package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
)

// Delete safety (issue 34). Three facts the delete executor needs the
// database to hold, whatever runs beside it:
//   - delete_claims: every file a running plan names, keepers included, is
//     claimed by that plan's job, one job per file (the primary key). A
//     claim is live while its job is not terminal; controld clears dead
//     claims when it authorizes the next plan. Only controld writes it.
//   - delete_intents: workerd records where it is about to move a file
//     before it moves it, and deletes the intent in the transaction that
//     records the outcome. An intent left behind (a crash, a failed write)
//     is reconciled from the disk by the job's next run or by its cancel.
//   - delete_plan_files.library_path: the library's folder when the plan
//     was made. A plan whose library was deleted, or moved, or whose id
//     now names another folder, is refused (plan_invalid).
//   - libraries.id AUTOINCREMENT: a deleted library's id is never given
//     to a new one (PostgreSQL's identity columns never reuse a value).
func addDeleteSafety(ctx context.Context, tx *sql.Tx) error {
	if err := execSchema(ctx, tx, "delete safety", deleteSafetySchema); err != nil {
		return err
	}
	if err := libraryIDsNeverReused(ctx, tx); err != nil {
		return err
	}
	return guardTimes(ctx, tx, "delete_intents", "libraries")
}

// libraryIDKey is the libraries table's key as created by migration 2.
var libraryIDKey = regexp.MustCompile(`(?i)\bid\s+INTEGER\s+PRIMARY\s+KEY\b`)

// libraryIDsNeverReused rebuilds libraries with an AUTOINCREMENT key:
// SQLite gives a new row max(id)+1, so deleting the newest library handed
// its id to the next one. The table is rebuilt the way SQLite documents
// (create, copy, drop, rename; foreign keys are off during migrations, and
// the tables that reference libraries name it, so they follow the rename),
// and its time triggers, dropped with the old table, are made again.
func libraryIDsNeverReused(ctx context.Context, tx *sql.Tx) error {
	var ddl string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'libraries'`).Scan(&ddl); err != nil {
		return fmt.Errorf("libraries: %w", err)
	}
	if strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") {
		return nil
	}
	if !libraryIDKey.MatchString(ddl) {
		return fmt.Errorf("libraries: no integer primary key in %q", ddl)
	}
	ddl = strings.Replace(ddl, "CREATE TABLE libraries", "CREATE TABLE libraries_new", 1)
	ddl = libraryIDKey.ReplaceAllLiteralString(ddl, "id INTEGER PRIMARY KEY AUTOINCREMENT")
	for _, stmt := range []string{ddl, `INSERT INTO libraries_new SELECT * FROM libraries`, `DROP TABLE libraries`,
		`ALTER TABLE libraries_new RENAME TO libraries`} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("libraries: %w", err)
		}
	}
	return nil
}

const deleteSafetySchema = `
CREATE TABLE delete_claims (
    file_id INTEGER PRIMARY KEY,
    plan_id INTEGER NOT NULL REFERENCES delete_plans(id) ON DELETE CASCADE,
    job_id  INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE
);
CREATE INDEX ix_delete_claims_job ON delete_claims (job_id);
CREATE INDEX ix_delete_claims_plan ON delete_claims (plan_id);

CREATE TABLE delete_intents (
    job_id     INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    file_id    INTEGER NOT NULL,
    trash_path TEXT    NOT NULL CHECK (trash_path LIKE '.bindery-trash/%'),
    created_at TEXT    NOT NULL,
    PRIMARY KEY (job_id, file_id)
);

ALTER TABLE delete_plan_files ADD COLUMN library_path TEXT;
`
