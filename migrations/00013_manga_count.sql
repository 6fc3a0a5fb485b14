-- +goose Up
-- ComicInfo <Manga> and <Count> per book (issue 19, item 4): whether the
-- book reads as manga, right to left, and how many issues its series has.
-- A series takes each from its first book in natural order that has it.
-- Rows analysed before this migration get them at their next analysis.
ALTER TABLE file_metadata ADD COLUMN manga TEXT CHECK (manga IN ('no', 'yes', 'yes_rtl'));
ALTER TABLE file_metadata ADD COLUMN series_count INTEGER CHECK (series_count IS NULL OR series_count > 0);

-- +goose Down
ALTER TABLE file_metadata DROP COLUMN series_count;
ALTER TABLE file_metadata DROP COLUMN manga;
