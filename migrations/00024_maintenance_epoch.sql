-- +goose Up
-- Fencing of the maintenance leases (issue 35): as jobs (18) and covers (21),
-- every claim of a thumbnail_cleanup_jobs or wal_maintenance_jobs row raises
-- lease_epoch, and what a worker writes for that claim (the cleaned
-- thumbnail rows, the row's end) checks that the row is still running, its
-- own, unexpired and at that epoch. Rows claimed before this migration keep
-- 0 until their next claim.
ALTER TABLE thumbnail_cleanup_jobs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);
ALTER TABLE wal_maintenance_jobs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);

-- +goose Down
ALTER TABLE wal_maintenance_jobs DROP COLUMN lease_epoch;
ALTER TABLE thumbnail_cleanup_jobs DROP COLUMN lease_epoch;
