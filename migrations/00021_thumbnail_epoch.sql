-- +goose Up
-- Fencing of covers (issue 35): every claim of a thumbnails row raises
-- lease_epoch, and what a worker writes for that claim (the file's cover
-- version in library_files, the row's ready or failed end) checks that the
-- row is still running, its own, unexpired and at that epoch. A worker
-- whose cover was recovered, even one that claims the same row again,
-- writes nothing more under its old claim. Rows claimed before this
-- migration keep 0 until their next claim.
ALTER TABLE thumbnails ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);

-- +goose Down
ALTER TABLE thumbnails DROP COLUMN lease_epoch;
