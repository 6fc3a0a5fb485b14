-- +goose Up
-- A scan deletes the rows of files missing longer than
-- scan.missing.purge_after_days (once their covers were cleaned up) and
-- counts them here.
ALTER TABLE scan_sessions ADD COLUMN purged INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE scan_sessions DROP COLUMN purged;
