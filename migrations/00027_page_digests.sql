-- +goose Up
-- Page digests (issue 38): the BLAKE3 of every decompressed page of the
-- books whose page signatures make them candidates for "the same book in
-- another container", written by the hash job's last phase under its
-- fence. Each row records the file version it was read from (the file's
-- size_bytes and mtime_ns then): a book whose row no longer matches is
-- read again, and its old rows are replaced in the same transaction.
CREATE TABLE page_digests (
    file_id         INTEGER NOT NULL REFERENCES library_files(id) ON DELETE CASCADE,
    page_seq        INTEGER NOT NULL CHECK (page_seq >= 0),
    file_size_bytes INTEGER NOT NULL,
    file_mtime_ns   INTEGER NOT NULL,
    page_size       INTEGER NOT NULL CHECK (page_size >= 0),
    digest          BLOB    NOT NULL CHECK (length(digest) = 32),
    PRIMARY KEY (file_id, page_seq)
);
CREATE INDEX page_digests_digest ON page_digests (digest);

-- +goose Down
DROP TABLE page_digests;
