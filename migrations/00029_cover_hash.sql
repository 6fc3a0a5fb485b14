-- +goose Up
-- Similar covers (issue 38, item 5): the 64-bit difference hash (dHash) of
-- a ready cover, computed by workerd from the cover it rendered and written
-- with the row's ready end under the thumbnail's fence. Signed 64-bit: the
-- hash's bit pattern as an INTEGER. NULL: rendered before this migration
-- (or not ready). task 'hash' is a row admitted by controld for such a
-- cover: workerd hashes the cached cover file instead of rendering it
-- again (it renders when the file is gone); 'render' is every other row.
ALTER TABLE thumbnails ADD COLUMN cover_hash INTEGER;
ALTER TABLE thumbnails ADD COLUMN task TEXT NOT NULL DEFAULT 'render' CHECK (task IN ('render','hash'));
-- The ready covers still without a hash, which controld's backfill admits.
CREATE INDEX ix_thumbnails_unhashed ON thumbnails (id) WHERE status = 'ready' AND cover_hash IS NULL;

-- +goose Down
DROP INDEX ix_thumbnails_unhashed;
ALTER TABLE thumbnails DROP COLUMN task;
ALTER TABLE thumbnails DROP COLUMN cover_hash;
