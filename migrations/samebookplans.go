package migrations

import (
	"context"
	"database/sql"
)

// Same-book plans (issue 38, migration 28). A plan may now resolve groups
// of books that hold the same pages in other containers, not only groups
// of byte-identical copies:
//   - delete_plans.group_kind: 'bytes' (every plan before) or
//     'same_pages': what its groups are, and so what workerd proves before
//     a copy moves (the keeper's bytes, or the keeper's pages);
//   - delete_plans.policy: two more ways to pick the keeper,
//     'prefer_format' (a container order such as zip > 7z > rar) and
//     'smallest';
//   - delete_plan_files.group_key: a same_pages group's key as
//     GET /duplicates/books lists it (32 bytes; NULL in byte plans, whose
//     key is the row's own hash).
//
// SQLite cannot change a CHECK, so delete_plans is rebuilt the way SQLite
// documents (create, copy, drop, rename; foreign keys are off during
// migrations and the tables that reference it name it, so they follow the
// rename); its indexes and time triggers, dropped with the old table, are
// made again.
func addSameBookPlans(ctx context.Context, tx *sql.Tx) error {
	if err := execSchema(ctx, tx, "same-book plans", sameBookPlansSchema); err != nil {
		return err
	}
	return guardTimes(ctx, tx, "delete_plans")
}

const sameBookPlansSchema = `
CREATE TABLE delete_plans_new (
    id           INTEGER PRIMARY KEY,
    policy       TEXT    NOT NULL CHECK (policy IN ('oldest', 'shortest_path', 'prefer_library', 'prefer_path_prefix', 'explicit',
                     'prefer_format', 'smallest')),
    action       TEXT    NOT NULL DEFAULT 'trash' CHECK (action IN ('trash', 'unlink', 'restore', 'purge')),
    trash_job_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    request      TEXT    NOT NULL DEFAULT '{}',
    group_count  INTEGER NOT NULL CHECK (group_count >= 0),
    remove_count INTEGER NOT NULL CHECK (remove_count >= 0),
    bytes_freed  INTEGER NOT NULL CHECK (bytes_freed >= 0),
    job_id       INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    created_at   TEXT    NOT NULL,
    expires_at   TEXT    NOT NULL,
    executed_at  TEXT,
    group_kind   TEXT    NOT NULL DEFAULT 'bytes' CHECK (group_kind IN ('bytes', 'same_pages'))
);
INSERT INTO delete_plans_new (id, policy, action, trash_job_id, request, group_count, remove_count, bytes_freed, job_id,
    created_at, expires_at, executed_at)
    SELECT id, policy, action, trash_job_id, request, group_count, remove_count, bytes_freed, job_id,
    created_at, expires_at, executed_at FROM delete_plans;
DROP TABLE delete_plans;
ALTER TABLE delete_plans_new RENAME TO delete_plans;
CREATE INDEX ix_delete_plans_created ON delete_plans (created_at DESC, id DESC);
CREATE UNIQUE INDEX ix_delete_plans_job ON delete_plans (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX ix_delete_plans_trash_job ON delete_plans (trash_job_id, action) WHERE trash_job_id IS NOT NULL;

ALTER TABLE delete_plan_files ADD COLUMN group_key BLOB CHECK (group_key IS NULL OR length(group_key) = 32);
`
