-- +goose Up
-- Fencing (issue 35, DESIGN invariant 10): every claim of a jobs row raises
-- lease_epoch, and every data write a worker makes for that claim (files,
-- hashes, series, scan sessions) checks in its own transaction that the row
-- is still running, its own, unexpired and at that epoch. A worker whose
-- lease was recovered, even one that claims the same row again, writes
-- nothing more under its old claim. Rows claimed before this migration
-- keep 0 until their next claim.
ALTER TABLE jobs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);
-- Recovery of a stale job closes its running scan session in the same
-- transaction; this index finds it without reading every session.
CREATE INDEX ix_scan_sessions_running_job ON scan_sessions (job_id) WHERE status = 'running';

-- +goose Down
DROP INDEX ix_scan_sessions_running_job;
ALTER TABLE jobs DROP COLUMN lease_epoch;
