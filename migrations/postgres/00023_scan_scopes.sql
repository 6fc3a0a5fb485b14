-- +goose Up
-- Folder-scoped scans and the change watcher (issue 39): the same columns
-- as SQLite's migration 23.
ALTER TABLE scan_requests ADD COLUMN paths text CHECK (paths IS NULL OR (json_typeof(paths::json) = 'array'
    AND json_array_length(paths::json) BETWEEN 1 AND 1000));
ALTER TABLE libraries ADD COLUMN watch text NOT NULL DEFAULT 'auto' CHECK (watch IN ('auto','inotify','poll','off'));

-- +goose Down
ALTER TABLE libraries DROP COLUMN watch;
ALTER TABLE scan_requests DROP COLUMN paths;
