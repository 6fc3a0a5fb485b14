-- +goose Up
-- Full-text search (issue 37 item 8). book_search indexes each file under
-- its docid (= library_files.id): title (ComicInfo title and relative
-- path), series (the series row's name, else ComicInfo's) and people
-- (writer, penciller); series_search indexes series names under the
-- series id. Both are FTS4 (this build of SQLite has no FTS5) with
-- unicode61 folding case and diacritics. Triggers keep them in step with
-- every writer (scanner, rescan, move, delete, third party), reading the
-- document from book_search_source so that each writes the same text.
CREATE VIEW book_search_source AS
SELECT f.id AS docid,
       coalesce(m.title, '') || ' ' || f.relative_path AS title,
       coalesce(s.name, m.series, '') AS series,
       coalesce(m.writer, '') || ' ' || coalesce(m.penciller, '') AS people
FROM library_files f
LEFT JOIN series s ON s.id = f.series_id
LEFT JOIN file_metadata m ON m.file_id = f.id;

CREATE VIRTUAL TABLE book_search USING fts4(title, series, people, tokenize=unicode61 "remove_diacritics=2");
CREATE VIRTUAL TABLE series_search USING fts4(name, tokenize=unicode61 "remove_diacritics=2");

INSERT INTO book_search (docid, title, series, people) SELECT docid, title, series, people FROM book_search_source;
INSERT INTO series_search (docid, name) SELECT id, name FROM series;

-- +goose StatementBegin
CREATE TRIGGER tr_book_search_file_insert AFTER INSERT ON library_files
BEGIN
    INSERT INTO book_search (docid, title, series, people)
    SELECT docid, title, series, people FROM book_search_source WHERE docid = new.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_book_search_file_update AFTER UPDATE OF relative_path, series_id ON library_files
WHEN old.relative_path IS NOT new.relative_path OR old.series_id IS NOT new.series_id
BEGIN
    DELETE FROM book_search WHERE docid = old.id;
    INSERT INTO book_search (docid, title, series, people)
    SELECT docid, title, series, people FROM book_search_source WHERE docid = new.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_book_search_file_delete AFTER DELETE ON library_files
BEGIN
    DELETE FROM book_search WHERE docid = old.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_book_search_metadata_insert AFTER INSERT ON file_metadata
BEGIN
    DELETE FROM book_search WHERE docid = new.file_id;
    INSERT INTO book_search (docid, title, series, people)
    SELECT docid, title, series, people FROM book_search_source WHERE docid = new.file_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_book_search_metadata_update AFTER UPDATE ON file_metadata
WHEN old.file_id IS NOT new.file_id OR old.title IS NOT new.title OR old.series IS NOT new.series
    OR old.writer IS NOT new.writer OR old.penciller IS NOT new.penciller
BEGIN
    DELETE FROM book_search WHERE docid IN (old.file_id, new.file_id);
    INSERT INTO book_search (docid, title, series, people)
    SELECT docid, title, series, people FROM book_search_source WHERE docid IN (old.file_id, new.file_id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_book_search_metadata_delete AFTER DELETE ON file_metadata
BEGIN
    DELETE FROM book_search WHERE docid = old.file_id;
    INSERT INTO book_search (docid, title, series, people)
    SELECT docid, title, series, people FROM book_search_source WHERE docid = old.file_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_search_series_insert AFTER INSERT ON series
BEGIN
    INSERT INTO series_search (docid, name) VALUES (new.id, new.name);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_search_series_update AFTER UPDATE OF name ON series
WHEN old.name IS NOT new.name
BEGIN
    DELETE FROM series_search WHERE docid = old.id;
    INSERT INTO series_search (docid, name) VALUES (new.id, new.name);
    DELETE FROM book_search WHERE docid IN (SELECT id FROM library_files WHERE series_id = new.id);
    INSERT INTO book_search (docid, title, series, people)
    SELECT b.docid, b.title, b.series, b.people FROM book_search_source b
    JOIN library_files f ON f.id = b.docid WHERE f.series_id = new.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tr_search_series_delete AFTER DELETE ON series
BEGIN
    DELETE FROM series_search WHERE docid = old.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER tr_search_series_delete;
DROP TRIGGER tr_search_series_update;
DROP TRIGGER tr_search_series_insert;
DROP TRIGGER tr_book_search_metadata_delete;
DROP TRIGGER tr_book_search_metadata_update;
DROP TRIGGER tr_book_search_metadata_insert;
DROP TRIGGER tr_book_search_file_delete;
DROP TRIGGER tr_book_search_file_update;
DROP TRIGGER tr_book_search_file_insert;
DROP TABLE series_search;
DROP TABLE book_search;
DROP VIEW book_search_source;
