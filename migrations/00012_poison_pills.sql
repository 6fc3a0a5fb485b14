-- +goose Up
-- A cover whose render kills workerd (libvips through cgo, out of memory)
-- would be claimed again after every restart, forever. Recoveries of a
-- stale lease are counted; the third fails the row (render_crashed,
-- cleanup_crashed). A graceful release does not count.
ALTER TABLE thumbnails ADD COLUMN recovered_count INTEGER NOT NULL DEFAULT 0 CHECK (recovered_count >= 0);
ALTER TABLE thumbnail_cleanup_jobs ADD COLUMN recovered_count INTEGER NOT NULL DEFAULT 0 CHECK (recovered_count >= 0);

-- Protocol §7: only settled cover rows may be deleted (workerd's cleanup,
-- controld's pruning). The database enforces it for every writer, so a
-- pending or running row cannot vanish under its worker.
-- +goose StatementBegin
CREATE TRIGGER tr_thumbnails_delete_settled BEFORE DELETE ON thumbnails
WHEN old.status NOT IN ('ready', 'failed')
BEGIN
    SELECT RAISE(ABORT, 'thumbnails: only ready or failed rows may be deleted');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER tr_thumbnails_delete_settled;
ALTER TABLE thumbnail_cleanup_jobs DROP COLUMN recovered_count;
ALTER TABLE thumbnails DROP COLUMN recovered_count;
