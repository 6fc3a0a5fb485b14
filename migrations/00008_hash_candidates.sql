-- +goose Up
-- Candidate-first hashing (issue 16). A file can only be a duplicate of a
-- present file of the same size, and two files whose first and last 64 KiB
-- differ are never equal, so a hash job fully hashes those files first and
-- fills in everyone else's content_hash afterwards.
--
-- partial_hash is the BLAKE3 digest of a file's first 4 KiB (files of 8 to
-- 128 KiB) or first and last 64 KiB (larger files); it is only compared
-- between files of one size. It is never a content hash and never groups
-- anything: it only decides which files are read whole first. NULL means
-- unknown.
ALTER TABLE library_files ADD COLUMN partial_hash BLOB
    CHECK (partial_hash IS NULL OR length(partial_hash) = 32);

-- Serves "another present file of this size (with this partial digest)":
-- the candidate test of every due file, and the size groups of the
-- candidate phase.
CREATE INDEX ix_library_files_size_partial ON library_files (size_bytes, partial_hash)
    WHERE is_missing = 0;

-- A partial digest describes one version of a file. Whoever records a new
-- size or mtime (the scanner, a third party) makes it unknown again, in the
-- same statement, so no writer can leave a stale one behind.
-- +goose StatementBegin
CREATE TRIGGER tr_library_files_partial_reset
AFTER UPDATE OF size_bytes, mtime_ns ON library_files
WHEN new.partial_hash IS NOT NULL
 AND (old.size_bytes IS NOT new.size_bytes OR old.mtime_ns IS NOT new.mtime_ns)
BEGIN
    UPDATE library_files SET partial_hash = NULL WHERE id = new.id;
END;
-- +goose StatementEnd

-- Follow-ups now cover two kinds of finished jobs: scans (the hash job
-- after a completed scan) and hash jobs that yielded the single-active slot
-- to a scan (their remaining work, requested again behind the scan).
ALTER TABLE scan_followups RENAME TO job_followups;

-- +goose Down
ALTER TABLE job_followups RENAME TO scan_followups;
DROP TRIGGER IF EXISTS tr_library_files_partial_reset;
DROP INDEX IF EXISTS ix_library_files_size_partial;
ALTER TABLE library_files DROP COLUMN partial_hash;
