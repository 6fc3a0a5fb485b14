-- +goose Up
-- The Bindery schema. Every enum column carries a CHECK with exactly the
-- protocol's lowercase values; every timestamp is UTC text in SQLite's own
-- format with milliseconds ('YYYY-MM-DD HH:MM:SS.SSS'), so that any client
-- can compare it with strftime('%Y-%m-%d %H:%M:%f','now').

CREATE TABLE libraries (
    id                    INTEGER PRIMARY KEY,
    name                  TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    path                  TEXT    NOT NULL UNIQUE,
    scan_interval_minutes INTEGER NOT NULL DEFAULT 0 CHECK (scan_interval_minutes >= 0),
    last_scan_requested_at TEXT,
    created_at            TEXT    NOT NULL,
    updated_at            TEXT    NOT NULL
);

CREATE TABLE jobs (
    id                  INTEGER PRIMARY KEY,
    kind                TEXT    NOT NULL CHECK (kind IN ('scan','hash','delete','thumbnail')),
    status              TEXT    NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending','running','completed','failed','cancelled','retryable')),
    library_id          INTEGER REFERENCES libraries(id) ON DELETE SET NULL,
    priority            TEXT    NOT NULL DEFAULT 'normal' CHECK (priority IN ('high','normal')),
    payload             TEXT    NOT NULL DEFAULT '{}',
    progress            REAL    NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
    processed_items     INTEGER NOT NULL DEFAULT 0,
    total_items         INTEGER,
    result              TEXT,
    attempt             INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    retry_after         TEXT,
    cancel_requested    INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0,1)),
    worker_id           TEXT,
    worker_heartbeat_at TEXT,
    lease_expires_at    TEXT,
    error_code          TEXT,
    error_message       TEXT,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    started_at          TEXT,
    finished_at         TEXT
);
CREATE INDEX ix_jobs_created ON jobs (created_at DESC, id DESC);
CREATE INDEX ix_jobs_claim ON jobs (status, priority, created_at, id);
CREATE INDEX ix_jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX ix_jobs_library ON jobs (library_id, created_at DESC, id DESC);

-- Requests for scan/hash work that wait for the single-active slot.
CREATE TABLE scan_requests (
    id          INTEGER PRIMARY KEY,
    kind        TEXT    NOT NULL CHECK (kind IN ('scan','hash')),
    library_id  INTEGER REFERENCES libraries(id) ON DELETE CASCADE,
    priority    TEXT    NOT NULL CHECK (priority IN ('high','normal')),
    reason      TEXT    NOT NULL DEFAULT '',
    created_at  TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL
);
CREATE UNIQUE INDEX ux_scan_requests_target ON scan_requests (kind, ifnull(library_id, 0));
CREATE INDEX ix_scan_requests_order ON scan_requests (priority, created_at, id);

CREATE TABLE scan_sessions (
    id               INTEGER PRIMARY KEY,
    job_id           INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
    library_id       INTEGER NOT NULL REFERENCES libraries(id) ON DELETE CASCADE,
    status           TEXT    NOT NULL DEFAULT 'running' CHECK (status IN ('running','succeeded','failed')),
    files_seen       INTEGER NOT NULL DEFAULT 0,
    directories_seen INTEGER NOT NULL DEFAULT 0,
    bytes_seen       INTEGER NOT NULL DEFAULT 0,
    added            INTEGER NOT NULL DEFAULT 0,
    changed          INTEGER NOT NULL DEFAULT 0,
    unchanged        INTEGER NOT NULL DEFAULT 0,
    missing          INTEGER NOT NULL DEFAULT 0,
    restored         INTEGER NOT NULL DEFAULT 0,
    moved            INTEGER NOT NULL DEFAULT 0,
    series_created   INTEGER NOT NULL DEFAULT 0,
    error_count      INTEGER NOT NULL DEFAULT 0,
    error_code       TEXT,
    error_message    TEXT,
    started_at       TEXT    NOT NULL,
    finished_at      TEXT
);
CREATE INDEX ix_scan_sessions_library ON scan_sessions (library_id, id DESC);

CREATE TABLE scan_errors (
    id            INTEGER PRIMARY KEY,
    session_id    INTEGER NOT NULL REFERENCES scan_sessions(id) ON DELETE CASCADE,
    relative_path TEXT    NOT NULL,
    error_code    TEXT    NOT NULL,
    message       TEXT    NOT NULL DEFAULT '',
    created_at    TEXT    NOT NULL
);
CREATE INDEX ix_scan_errors_session ON scan_errors (session_id, id);

CREATE TABLE series (
    id            INTEGER PRIMARY KEY,
    library_id    INTEGER NOT NULL REFERENCES libraries(id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    name_key      TEXT    NOT NULL,
    publisher     TEXT    NOT NULL DEFAULT '',
    publisher_key TEXT    NOT NULL DEFAULT '',
    year          INTEGER,
    summary       TEXT,
    file_count    INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL
);
-- Series identity: case-folded (library, name, publisher); two scanners can
-- never create the same series twice.
CREATE UNIQUE INDEX ux_series_identity ON series (library_id, name_key, publisher_key);

CREATE TABLE library_files (
    id                     INTEGER PRIMARY KEY,
    library_id             INTEGER NOT NULL REFERENCES libraries(id) ON DELETE CASCADE,
    relative_path          TEXT    NOT NULL,
    size_bytes             INTEGER NOT NULL CHECK (size_bytes >= 0),
    mtime_ns               INTEGER NOT NULL,
    inode                  INTEGER,
    device                 INTEGER,
    format                 TEXT    CHECK (format IN ('zip','rar','7z','image')),
    total_pages            INTEGER,
    series_id              INTEGER REFERENCES series(id) ON DELETE SET NULL,
    series_name_raw        TEXT,
    is_missing             INTEGER NOT NULL DEFAULT 0 CHECK (is_missing IN (0,1)),
    missing_since          TEXT,
    needs_analysis         INTEGER NOT NULL DEFAULT 1 CHECK (needs_analysis IN (0,1)),
    needs_hash             INTEGER NOT NULL DEFAULT 1 CHECK (needs_hash IN (0,1)),
    needs_cover            INTEGER NOT NULL DEFAULT 0 CHECK (needs_cover IN (0,1)),
    last_seen_scan_id      INTEGER,
    hash_algorithm         TEXT    CHECK (hash_algorithm IN ('blake3','sha256')),
    content_hash           BLOB    CHECK (content_hash IS NULL OR length(content_hash) = 32),
    hashed_size_bytes      INTEGER,
    hashed_mtime_ns        INTEGER,
    hashed_at              TEXT,
    hash_error_count       INTEGER NOT NULL DEFAULT 0,
    hash_last_error        TEXT,
    hash_last_error_at     TEXT,
    hash_retry_after       TEXT,
    analysis_error_code    TEXT,
    analysis_error_message TEXT,
    analyzed_at            TEXT,
    cover_updated_at       INTEGER,
    created_at             TEXT    NOT NULL,
    updated_at             TEXT    NOT NULL,
    UNIQUE (library_id, relative_path)
);
CREATE INDEX ix_library_files_dedup_group
    ON library_files (hash_algorithm, content_hash, is_missing, needs_hash, size_bytes);
CREATE INDEX ix_library_files_needs_hash ON library_files (library_id, id) WHERE needs_hash = 1 AND is_missing = 0;
CREATE INDEX ix_library_files_needs_analysis ON library_files (library_id, id) WHERE needs_analysis = 1;
CREATE INDEX ix_library_files_needs_cover ON library_files (library_id, id) WHERE needs_cover = 1;
CREATE INDEX ix_library_files_missing_size ON library_files (library_id, size_bytes) WHERE is_missing = 1;
CREATE INDEX ix_library_files_series ON library_files (series_id, relative_path);

-- ComicInfo.xml (or folder-derived) metadata of one file.
CREATE TABLE file_metadata (
    file_id          INTEGER PRIMARY KEY REFERENCES library_files(id) ON DELETE CASCADE,
    source           TEXT    NOT NULL CHECK (source IN ('comicinfo','folder','filename')),
    series           TEXT,
    number           TEXT,
    volume           INTEGER,
    title            TEXT,
    year             INTEGER,
    month            INTEGER,
    publisher        TEXT,
    genre            TEXT,
    tags             TEXT,
    age_rating       TEXT,
    language_iso     TEXT,
    writer           TEXT,
    penciller        TEXT,
    summary          TEXT,
    web              TEXT,
    front_cover_page INTEGER,
    updated_at       TEXT    NOT NULL
);

-- Thumbnail rows outlive their file (no foreign key) so that cleanup jobs can
-- still find and delete the cache file of a deleted file or library.
CREATE TABLE thumbnails (
    id                  INTEGER PRIMARY KEY,
    file_id             INTEGER NOT NULL,
    library_id          INTEGER NOT NULL,
    group_key           TEXT    NOT NULL,
    media_type          TEXT    NOT NULL DEFAULT 'image' CHECK (media_type IN ('image','video')),
    format              TEXT    NOT NULL DEFAULT 'webp' CHECK (format IN ('jpeg','webp')),
    status              TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','running','ready','failed')),
    output_relpath      TEXT    NOT NULL,
    width               INTEGER,
    height              INTEGER,
    bytes_size          INTEGER,
    worker_id           TEXT,
    worker_heartbeat_at TEXT,
    lease_expires_at    TEXT,
    error_code          TEXT,
    error_message       TEXT,
    error_count         INTEGER NOT NULL DEFAULT 0,
    retry_after         TEXT,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    started_at          TEXT,
    finished_at         TEXT
);
CREATE UNIQUE INDEX ux_thumbnails_active_file ON thumbnails (file_id, format) WHERE status IN ('pending','running');
CREATE INDEX ix_thumbnails_claim ON thumbnails (status, created_at, id);
CREATE INDEX ix_thumbnails_running_lease ON thumbnails (lease_expires_at) WHERE status = 'running';
CREATE INDEX ix_thumbnails_group ON thumbnails (group_key, status);
CREATE INDEX ix_thumbnails_file ON thumbnails (file_id, id DESC);
CREATE INDEX ix_thumbnails_retry ON thumbnails (retry_after) WHERE status = 'failed';

CREATE TABLE thumbnail_cleanup_jobs (
    id                  INTEGER PRIMARY KEY,
    group_key           TEXT    NOT NULL,
    status              TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','running','completed','failed')),
    execute_after       TEXT    NOT NULL,
    deleted_files       INTEGER NOT NULL DEFAULT 0,
    deleted_rows        INTEGER NOT NULL DEFAULT 0,
    worker_id           TEXT,
    worker_heartbeat_at TEXT,
    lease_expires_at    TEXT,
    error_code          TEXT,
    error_message       TEXT,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    finished_at         TEXT
);
CREATE INDEX ix_cleanup_claim ON thumbnail_cleanup_jobs (status, execute_after, id);
CREATE INDEX ix_cleanup_running_lease ON thumbnail_cleanup_jobs (lease_expires_at) WHERE status = 'running';

CREATE TABLE wal_maintenance_jobs (
    id                    INTEGER PRIMARY KEY,
    requested_mode        TEXT    NOT NULL DEFAULT 'passive' CHECK (requested_mode IN ('passive','restart','truncate')),
    reason                TEXT    NOT NULL DEFAULT '',
    status                TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','running','retryable','completed','failed')),
    execute_after         TEXT    NOT NULL,
    retry_count           INTEGER NOT NULL DEFAULT 0,
    retry_after           TEXT,
    checkpoint_busy       INTEGER,
    checkpoint_log_frames INTEGER,
    checkpointed_frames   INTEGER,
    worker_id             TEXT,
    worker_heartbeat_at   TEXT,
    lease_expires_at      TEXT,
    error_code            TEXT,
    error_message         TEXT,
    created_at            TEXT    NOT NULL,
    updated_at            TEXT    NOT NULL,
    started_at            TEXT,
    finished_at           TEXT
);
CREATE INDEX ix_wal_claim ON wal_maintenance_jobs (status, execute_after, id);
CREATE INDEX ix_wal_running_lease ON wal_maintenance_jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX ix_wal_created ON wal_maintenance_jobs (created_at DESC, id DESC);

CREATE TABLE io_rate_limits (
    bucket_key           TEXT    PRIMARY KEY,
    next_available_at_ms INTEGER NOT NULL,
    updated_at           TEXT    NOT NULL
);

CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE workers (
    worker_id    TEXT    PRIMARY KEY,
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT    NOT NULL,
    started_at   TEXT    NOT NULL,
    last_seen_at TEXT    NOT NULL,
    stopped_at   TEXT
);

-- +goose Down
SELECT 'refusing to drop the Bindery schema';
