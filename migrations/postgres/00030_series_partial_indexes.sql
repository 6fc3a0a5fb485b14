-- +goose Up
-- The SQLite side's migration 30 on PostgreSQL, so that both hold the same
-- indexes: those of library_files by series hold only linked files (every
-- read of them names a series; PostgreSQL's planner, with its statistics,
-- never took the NULL range for the scanner's updates, but the unlinked
-- files had no business there either).
DROP INDEX ix_library_files_series;
CREATE INDEX ix_library_files_series ON library_files (series_id, relative_path) WHERE series_id IS NOT NULL;
DROP INDEX ix_library_files_series_sort;
CREATE INDEX ix_library_files_series_sort ON library_files (series_id, sort_key, id) WHERE series_id IS NOT NULL;

-- +goose Down
DROP INDEX ix_library_files_series_sort;
CREATE INDEX ix_library_files_series_sort ON library_files (series_id, sort_key, id);
DROP INDEX ix_library_files_series;
CREATE INDEX ix_library_files_series ON library_files (series_id, relative_path);
