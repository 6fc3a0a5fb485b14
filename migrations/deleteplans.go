package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Resolving duplicates (issue 20). controld computes a plan (a dry run),
// stores it, and on execute authorizes one `delete` job to carry it out.
// delete_plans and delete_plan_files are the authorization: only controld
// writes them (workerd's authorizer refuses). workerd records what it did
// with each file in delete_outcomes, a data-plane table.
func addDeletePlans(ctx context.Context, tx *sql.Tx) error {
	if err := execSchema(ctx, tx, "delete plans", deletePlansSchema); err != nil {
		return err
	}
	return guardTimes(ctx, tx, "delete_plans", "delete_outcomes")
}

// execSchema runs the statements of schema (separated by ";" at a line's
// end) in order.
func execSchema(ctx context.Context, tx *sql.Tx, what, schema string) error {
	for _, stmt := range strings.Split(schema, ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// guardTimes gives the time columns of new tables the triggers migration
// 11 gave every table then (createTimeTriggers).
func guardTimes(ctx context.Context, tx *sql.Tx, tables ...string) error {
	all, err := timeColumns(ctx, tx)
	if err != nil {
		return err
	}
	for _, t := range all {
		if slices.Contains(tables, t.name) {
			if err := createTimeTriggers(ctx, tx, t); err != nil {
				return err
			}
		}
	}
	return nil
}

const deletePlansSchema = `
-- A library is read-only to Bindery until an operator allows deletion;
-- unlink (no trash) needs a second, separate permission.
ALTER TABLE libraries ADD COLUMN allow_delete INTEGER NOT NULL DEFAULT 0 CHECK (allow_delete IN (0, 1));
ALTER TABLE libraries ADD COLUMN allow_unlink INTEGER NOT NULL DEFAULT 0 CHECK (allow_unlink IN (0, 1));

CREATE TABLE delete_plans (
    id           INTEGER PRIMARY KEY,
    policy       TEXT    NOT NULL CHECK (policy IN ('oldest', 'shortest_path', 'prefer_library', 'prefer_path_prefix', 'explicit')),
    action       TEXT    NOT NULL DEFAULT 'trash' CHECK (action IN ('trash', 'unlink', 'restore', 'purge')),
    -- A restore or purge plan acts on what this delete job trashed.
    trash_job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    request      TEXT    NOT NULL DEFAULT '{}',
    group_count  INTEGER NOT NULL CHECK (group_count >= 0),
    remove_count INTEGER NOT NULL CHECK (remove_count >= 0),
    bytes_freed  INTEGER NOT NULL CHECK (bytes_freed >= 0),
    job_id       INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    created_at   TEXT    NOT NULL,
    expires_at   TEXT    NOT NULL,
    executed_at  TEXT
);
CREATE INDEX ix_delete_plans_created ON delete_plans (created_at DESC, id DESC);
CREATE UNIQUE INDEX ix_delete_plans_job ON delete_plans (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX ix_delete_plans_trash_job ON delete_plans (trash_job_id, action) WHERE trash_job_id IS NOT NULL;

-- Every member of every planned group, keeper and copies, with the identity
-- the plan saw: a copy is removed only while its file still has exactly this
-- size, mtime and content, and only while its keeper does too.
CREATE TABLE delete_plan_files (
    plan_id        INTEGER NOT NULL REFERENCES delete_plans(id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL CHECK (seq >= 0),
    group_seq      INTEGER NOT NULL CHECK (group_seq >= 0),
    file_id        INTEGER NOT NULL,
    library_id     INTEGER NOT NULL,
    relative_path  TEXT    NOT NULL,
    decision       TEXT    NOT NULL CHECK (decision IN ('keep', 'remove', 'restore', 'purge')),
    size_bytes     INTEGER NOT NULL,
    mtime_ns       INTEGER NOT NULL,
    hash_algorithm TEXT    NOT NULL CHECK (hash_algorithm IN ('blake3', 'sha256')),
    content_hash   BLOB    NOT NULL,
    PRIMARY KEY (plan_id, seq),
    UNIQUE (plan_id, file_id)
);

CREATE TABLE delete_outcomes (
    job_id     INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    file_id    INTEGER NOT NULL,
    outcome    TEXT    NOT NULL CHECK (outcome IN ('trashed', 'unlinked', 'restored', 'restore_conflict', 'purged', 'changed_since_plan', 'missing',
                   'path_violation', 'last_copy', 'read_only_filesystem', 'io_error')),
    message    TEXT    NOT NULL DEFAULT '',
    trash_path TEXT,
    created_at TEXT    NOT NULL,
    PRIMARY KEY (job_id, file_id)
);
`
