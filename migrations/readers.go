package migrations

import (
	"context"
	"database/sql"
)

// Readers (issue 37): reader accounts, the libraries each may see, their
// API keys and their reading progress. Only controld writes these tables.
// reading_progress.file_id has no foreign key: workerd deletes file rows
// (a move's placeholder, a purge) and a cascade would make it write a
// control-plane table; progress of a file row that no longer exists is
// never shown, because every read joins library_files.
func addReaders(ctx context.Context, tx *sql.Tx) error {
	if err := execSchema(ctx, tx, "readers", readersSchema); err != nil {
		return err
	}
	return guardTimes(ctx, tx, "users", "api_keys", "reading_progress")
}

const readersSchema = `
CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64),
    password_hash TEXT    NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
    disabled      INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL
);

CREATE TABLE user_libraries (
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    library_id INTEGER NOT NULL REFERENCES libraries(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, library_id)
);
CREATE INDEX ix_user_libraries_library ON user_libraries (library_id);

CREATE TABLE api_keys (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    key_hash     BLOB    NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    created_at   TEXT    NOT NULL,
    last_used_at TEXT
);
CREATE INDEX ix_api_keys_user ON api_keys (user_id);

CREATE TABLE reading_progress (
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    file_id    INTEGER NOT NULL,
    page       INTEGER NOT NULL CHECK (page >= 1),
    completed  INTEGER NOT NULL DEFAULT 0 CHECK (completed IN (0, 1)),
    updated_at TEXT    NOT NULL,
    PRIMARY KEY (user_id, file_id)
);
CREATE INDEX ix_reading_progress_recent ON reading_progress (user_id, updated_at, file_id);
`
