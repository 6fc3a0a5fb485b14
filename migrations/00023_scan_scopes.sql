-- +goose Up
-- Folder-scoped scans and the change watcher (issue 39).
-- scan_requests.paths: the folders a queued scan is scoped to, a JSON array
-- of '/'-ending paths relative to the library (protocol §9.2); NULL is the
-- whole library. Requests for the same library merge into the one entry.
ALTER TABLE scan_requests ADD COLUMN paths TEXT CHECK (paths IS NULL OR (json_valid(paths)
    AND json_type(paths) = 'array' AND json_array_length(paths) BETWEEN 1 AND 1000));

-- libraries.watch: how controld's change watcher follows the library
-- (auto: inotify unless the library is on a network mount or needs more
-- watches than the kernel allows, then poll; off: not watched).
ALTER TABLE libraries ADD COLUMN watch TEXT NOT NULL DEFAULT 'auto' CHECK (watch IN ('auto','inotify','poll','off'));

-- +goose Down
ALTER TABLE libraries DROP COLUMN watch;
ALTER TABLE scan_requests DROP COLUMN paths;
