-- +goose Up
-- Same-book plans (issue 38): the same columns and values as SQLite's
-- migration 28 (migrations/samebookplans.go).
ALTER TABLE delete_plans DROP CONSTRAINT delete_plans_policy_check;
ALTER TABLE delete_plans ADD CONSTRAINT delete_plans_policy_check CHECK (policy IN ('oldest', 'shortest_path', 'prefer_library',
    'prefer_path_prefix', 'explicit', 'prefer_format', 'smallest'));
ALTER TABLE delete_plans ADD COLUMN group_kind text NOT NULL DEFAULT 'bytes' CHECK (group_kind IN ('bytes', 'same_pages'));
ALTER TABLE delete_plan_files ADD COLUMN group_key bytea CHECK (group_key IS NULL OR length(group_key) = 32);

-- +goose Down
ALTER TABLE delete_plan_files DROP COLUMN group_key;
ALTER TABLE delete_plans DROP COLUMN group_kind;
ALTER TABLE delete_plans DROP CONSTRAINT delete_plans_policy_check;
ALTER TABLE delete_plans ADD CONSTRAINT delete_plans_policy_check CHECK (policy IN ('oldest', 'shortest_path', 'prefer_library',
    'prefer_path_prefix', 'explicit'));
