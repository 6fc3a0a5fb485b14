-- +goose Up
-- A multi-volume RAR book (Book.part1.rar … or Book.rar, Book.r00 …) is one
-- row, its first volume's (issue 24, item 3). volumes counts its volumes;
-- size_bytes and mtime_ns are then the sum and the newest of theirs, and
-- its content hash covers every volume in order. NULL for every other file.
-- Rows of later volumes indexed before this migration are no longer walked:
-- the next scan marks them missing, and purge removes them in time.
ALTER TABLE library_files ADD COLUMN volumes INTEGER CHECK (volumes IS NULL OR volumes BETWEEN 2 AND 999);

-- +goose Down
ALTER TABLE library_files DROP COLUMN volumes;
