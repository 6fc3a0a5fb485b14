-- +goose Up
-- Fencing (issue 35): the same column as SQLite's migration 18. Every claim
-- of a jobs row raises lease_epoch; every data write of that claim checks
-- it, with the row locked FOR SHARE, in the write's own transaction.
ALTER TABLE jobs ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);
-- Recovery of a stale job closes its running scan session in the same
-- transaction; this index finds it without reading every session.
CREATE INDEX ix_scan_sessions_running_job ON scan_sessions (job_id) WHERE status = 'running';

-- +goose Down
DROP INDEX ix_scan_sessions_running_job;
ALTER TABLE jobs DROP COLUMN lease_epoch;
