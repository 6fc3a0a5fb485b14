-- +goose Up
-- Full-text search (issue 37 item 8): the PostgreSQL side of SQLite's
-- FTS4 tables. book_search holds each file's tsvector ('simple' config:
-- names are lower-cased, never stemmed) built from book_search_source,
-- whose text is cut at every character that is not a letter or digit first,
-- as the API cuts a query (else the parser keeps "Saga/Saga" or "v1.2" as
-- one path or version token, and the words inside them are not found),
-- under a GIN index; triggers keep it in step with every writer. Series
-- names need no table: a GIN expression index on series serves them.
CREATE VIEW book_search_source AS
SELECT f.id AS file_id,
       to_tsvector('simple', regexp_replace(concat_ws(' ', m.title, f.relative_path, coalesce(s.name, m.series), m.writer,
           m.penciller), '[^[:alnum:]]+', ' ', 'g')) AS doc
FROM library_files f
LEFT JOIN series s ON s.id = f.series_id
LEFT JOIN file_metadata m ON m.file_id = f.id;

CREATE TABLE book_search (
    file_id bigint   PRIMARY KEY REFERENCES library_files(id) ON DELETE CASCADE,
    doc     tsvector NOT NULL
);
CREATE INDEX ix_book_search_doc ON book_search USING gin (doc);
CREATE INDEX ix_series_search ON series USING gin (to_tsvector('simple', regexp_replace(name, '[^[:alnum:]]+', ' ', 'g')));

INSERT INTO book_search (file_id, doc) SELECT file_id, doc FROM book_search_source;

-- The triggers cost every writer of these tables, so they do as little as
-- they can: the refresh is PL/pgSQL, whose statements are planned once per
-- session (a LANGUAGE sql body is planned again at every call); an insert
-- into library_files refreshes once per statement, from its transition
-- table; and an update fires only when a column the document reads really
-- changed (UPDATE OF alone fires whenever the column is SET, even to
-- itself, as a rescan does).
-- +goose StatementBegin
CREATE FUNCTION book_search_refresh(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM book_search WHERE file_id = ANY(ids);
    INSERT INTO book_search (file_id, doc) SELECT file_id, doc FROM book_search_source WHERE file_id = ANY(ids);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION tr_book_search_files_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM book_search_refresh(ARRAY(SELECT id FROM added));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION tr_book_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'library_files' THEN
        PERFORM book_search_refresh(ARRAY[NEW.id]);
    ELSIF TG_TABLE_NAME = 'series' THEN
        PERFORM book_search_refresh(ARRAY(SELECT id FROM library_files WHERE series_id = NEW.id));
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM book_search_refresh(ARRAY[NEW.file_id]);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM book_search_refresh(ARRAY[OLD.file_id]);
    ELSE
        PERFORM book_search_refresh(ARRAY[OLD.file_id, NEW.file_id]);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER tr_book_search_file_insert AFTER INSERT ON library_files
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION tr_book_search_files_added();
CREATE TRIGGER tr_book_search_file_update AFTER UPDATE OF relative_path, series_id ON library_files
    FOR EACH ROW WHEN (OLD.relative_path IS DISTINCT FROM NEW.relative_path OR OLD.series_id IS DISTINCT FROM NEW.series_id)
    EXECUTE FUNCTION tr_book_search();
CREATE TRIGGER tr_book_search_metadata AFTER INSERT OR DELETE ON file_metadata
    FOR EACH ROW EXECUTE FUNCTION tr_book_search();
CREATE TRIGGER tr_book_search_metadata_update AFTER UPDATE ON file_metadata
    FOR EACH ROW WHEN (OLD.file_id IS DISTINCT FROM NEW.file_id OR OLD.title IS DISTINCT FROM NEW.title
        OR OLD.series IS DISTINCT FROM NEW.series OR OLD.writer IS DISTINCT FROM NEW.writer
        OR OLD.penciller IS DISTINCT FROM NEW.penciller)
    EXECUTE FUNCTION tr_book_search();
CREATE TRIGGER tr_book_search_series AFTER UPDATE OF name ON series
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION tr_book_search();

-- +goose Down
DROP TRIGGER tr_book_search_series ON series;
DROP TRIGGER tr_book_search_metadata_update ON file_metadata;
DROP TRIGGER tr_book_search_metadata ON file_metadata;
DROP TRIGGER tr_book_search_file_update ON library_files;
DROP TRIGGER tr_book_search_file_insert ON library_files;
DROP FUNCTION tr_book_search();
DROP FUNCTION tr_book_search_files_added();
DROP FUNCTION book_search_refresh(bigint[]);
DROP INDEX ix_series_search;
DROP TABLE book_search;
DROP VIEW book_search_source;
