-- +goose Up
-- Fencing of the maintenance leases (issue 35): the same columns as SQLite's
-- migration 24. Every claim of a cleanup or WAL row raises lease_epoch; the
-- cleaned thumbnail rows and the row's end written for that claim check it.
ALTER TABLE thumbnail_cleanup_jobs ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);
ALTER TABLE wal_maintenance_jobs ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);

-- +goose Down
ALTER TABLE wal_maintenance_jobs DROP COLUMN lease_epoch;
ALTER TABLE thumbnail_cleanup_jobs DROP COLUMN lease_epoch;
