-- +goose Up
-- The indexes of library_files by series hold only linked files. With the
-- unlinked ones in them (series_id NULL), SQLite's planner, which takes
-- "series_id IS NULL" for an equality on one key, served the scanner's
-- "UPDATE ... WHERE id IN (...) AND series_id IS NULL" from the index's
-- NULL range instead of the primary key: every statement of a first scan's
-- series phase read every file still unlinked, so the phase grew with the
-- square of the library (about 134 pages read per book linked at 1,000,000
-- books, against 0.1 with these). Every read of them names a series
-- (series_id = ?), which a partial index on series_id IS NOT NULL serves.
DROP INDEX ix_library_files_series;
CREATE INDEX ix_library_files_series ON library_files (series_id, relative_path) WHERE series_id IS NOT NULL;
DROP INDEX ix_library_files_series_sort;
CREATE INDEX ix_library_files_series_sort ON library_files (series_id, sort_key, id) WHERE series_id IS NOT NULL;

-- +goose Down
DROP INDEX ix_library_files_series_sort;
CREATE INDEX ix_library_files_series_sort ON library_files (series_id, sort_key, id);
DROP INDEX ix_library_files_series;
CREATE INDEX ix_library_files_series ON library_files (series_id, relative_path);
