-- +goose Up
-- Protocol §5: at most one scan/hash job is pending or running. Built only
-- after 00003 has repaired any legacy rows that would violate it.
CREATE UNIQUE INDEX IF NOT EXISTS ix_jobs_single_active_scan_hash ON jobs ((1))
    WHERE lower(status) IN ('pending','running') AND lower(kind) IN ('scan','hash');

-- +goose Down
DROP INDEX IF EXISTS ix_jobs_single_active_scan_hash;
