-- +goose Up
-- jobs.followed_up (issue 35, item 2): controld's mark that it looked at a
-- finished job for its follow-up (protocol §9.2), set in the transaction
-- that follows the job up (or finds nothing to do). controld lists the
-- finished jobs still unmarked through ix_jobs_follow_up instead of walking
-- ids above a floor: on PostgreSQL ids are taken at INSERT, not at commit,
-- so a job may become visible below a floor already passed. workerd never
-- writes it.
ALTER TABLE jobs ADD COLUMN followed_up INTEGER NOT NULL DEFAULT 0 CHECK (followed_up IN (0,1));

-- Finished jobs already followed up, and those that need no follow-up
-- (kinds other than scan and hash, a hash that did not complete or whose
-- result does not mention yielding), are marked; controld decides the rest.
UPDATE jobs SET followed_up = 1
WHERE status IN ('completed','failed','cancelled')
  AND (id IN (SELECT job_id FROM job_followups)
       OR kind NOT IN ('scan','hash')
       OR (kind = 'hash' AND (status <> 'completed' OR coalesce(result, '') NOT LIKE '%yielded%')));

CREATE INDEX ix_jobs_follow_up ON jobs (id) WHERE followed_up = 0 AND status IN ('completed','failed','cancelled');

-- +goose Down
DROP INDEX IF EXISTS ix_jobs_follow_up;
ALTER TABLE jobs DROP COLUMN followed_up;
