-- +goose Up
-- Delete safety (issue 34): the same tables as SQLite's migration 20
-- (migrations/deletesafety.go, which explains them).
CREATE TABLE delete_claims (
    file_id bigint PRIMARY KEY,
    plan_id bigint NOT NULL REFERENCES delete_plans(id) ON DELETE CASCADE,
    job_id  bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE
);
CREATE INDEX ix_delete_claims_job ON delete_claims (job_id);
CREATE INDEX ix_delete_claims_plan ON delete_claims (plan_id);

CREATE TABLE delete_intents (
    job_id     bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    file_id    bigint NOT NULL,
    trash_path text   NOT NULL CHECK (trash_path LIKE '.bindery-trash/%'),
    created_at timestamptz(3) NOT NULL,
    PRIMARY KEY (job_id, file_id)
);

ALTER TABLE delete_plan_files ADD COLUMN library_path text;
