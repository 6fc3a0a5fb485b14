-- +goose Up
-- controld's event feed (GET /api/v1/events) learns of changes made by any
-- process from the database: after PRAGMA data_version says something was
-- committed, it reads the jobs and thumbnail rows updated since its last
-- look. These indexes keep that read proportional to what changed, not to
-- the size of the tables.
CREATE INDEX IF NOT EXISTS ix_jobs_updated ON jobs (updated_at);
CREATE INDEX IF NOT EXISTS ix_thumbnails_updated ON thumbnails (updated_at);

-- GET /api/v1/jobs?status= pages newest first within one status: this
-- index serves both the filter and the order (protocol §6.1 keyset), so a
-- page never sorts.
CREATE INDEX IF NOT EXISTS ix_jobs_status_created ON jobs (status, created_at DESC, id DESC);

-- +goose Down
DROP INDEX IF EXISTS ix_jobs_status_created;
DROP INDEX IF EXISTS ix_thumbnails_updated;
DROP INDEX IF EXISTS ix_jobs_updated;
