-- +goose Up
-- Similar covers (issue 38, item 5): the same columns as SQLite's
-- migration 29. cover_hash is the 64-bit dHash of a ready cover as a
-- signed bigint, written with the ready end under the thumbnail's fence;
-- task 'hash' rows hash a cover cached before this migration.
ALTER TABLE thumbnails ADD COLUMN cover_hash bigint;
ALTER TABLE thumbnails ADD COLUMN task text NOT NULL DEFAULT 'render' CHECK (task IN ('render','hash'));
-- The ready covers still without a hash, which controld's backfill admits.
CREATE INDEX ix_thumbnails_unhashed ON thumbnails (id) WHERE status = 'ready' AND cover_hash IS NULL;

-- +goose Down
DROP INDEX ix_thumbnails_unhashed;
ALTER TABLE thumbnails DROP COLUMN task;
ALTER TABLE thumbnails DROP COLUMN cover_hash;
