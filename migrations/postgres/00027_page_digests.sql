-- +goose Up
-- Page digests (issue 38): the same table as SQLite's migration 27.
CREATE TABLE page_digests (
    file_id         bigint NOT NULL REFERENCES library_files(id) ON DELETE CASCADE,
    page_seq        bigint NOT NULL CHECK (page_seq >= 0),
    file_size_bytes bigint NOT NULL,
    file_mtime_ns   bigint NOT NULL,
    page_size       bigint NOT NULL CHECK (page_size >= 0),
    digest          bytea  NOT NULL CHECK (length(digest) = 32),
    PRIMARY KEY (file_id, page_seq)
);
CREATE INDEX page_digests_digest ON page_digests (digest);

-- +goose Down
DROP TABLE page_digests;
