-- +goose Up
-- Fencing of covers (issue 35): the same column as SQLite's migration 21.
-- Every claim of a thumbnails row raises lease_epoch; the cover version and
-- the row's end written for that claim check it, the row locked FOR SHARE
-- (or matched by the finishing UPDATE itself).
ALTER TABLE thumbnails ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);

-- +goose Down
ALTER TABLE thumbnails DROP COLUMN lease_epoch;
