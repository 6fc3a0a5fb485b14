-- +goose Up
-- Page signatures (issue 38): the ordered (size, CRC-32) of a book's pages
-- as its archive index states them, written by the scan's analysis
-- (internal/pagesig's encoding), and pages_key, the SHA-256 of the sorted
-- multiset, set only when every page has a CRC. Books with equal pages_key
-- are candidates for "the same book in another container", found by a
-- pass over the column (an index on it cost 5 % of a first scan's files/s).
ALTER TABLE library_files ADD COLUMN page_signature BLOB;
ALTER TABLE library_files ADD COLUMN pages_key BLOB CHECK (pages_key IS NULL OR length(pages_key) = 32);

-- +goose Down
ALTER TABLE library_files DROP COLUMN pages_key;
ALTER TABLE library_files DROP COLUMN page_signature;
