-- +goose Up
-- Page signatures (issue 38): the same columns as SQLite's migration 25.
ALTER TABLE library_files ADD COLUMN page_signature bytea;
ALTER TABLE library_files ADD COLUMN pages_key bytea CHECK (pages_key IS NULL OR length(pages_key) = 32);

-- +goose Down
ALTER TABLE library_files DROP COLUMN pages_key;
ALTER TABLE library_files DROP COLUMN page_signature;
