-- +goose Up
-- Scan follow-ups (issue 8): controld's record that the policy work after a
-- finished scan job (queueing the hash job when scan.hash.mode=full) was
-- done, exactly once per scan job. A row is written in the same transaction
-- as the follow-up it records. Deleting the job (retention) deletes the row.
CREATE TABLE scan_followups (
    job_id         INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    library_id     INTEGER REFERENCES libraries(id) ON DELETE SET NULL,
    job_status     TEXT    NOT NULL CHECK (job_status IN ('completed','failed','cancelled')),
    hash_requested INTEGER NOT NULL DEFAULT 0 CHECK (hash_requested IN (0,1)),
    created_at     TEXT    NOT NULL
);

-- Scans that ended before this table existed were followed up (or not) by
-- whatever ran then: never again.
INSERT INTO scan_followups (job_id, library_id, job_status, hash_requested, created_at)
SELECT id, library_id, status, 0, strftime('%Y-%m-%d %H:%M:%f', 'now')
FROM jobs WHERE kind = 'scan' AND status IN ('completed','failed','cancelled');

-- +goose Down
DROP TABLE IF EXISTS scan_followups;
