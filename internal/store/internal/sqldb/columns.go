package sqldb

// FileCols selects a model.File from library_files f joined with its
// series s: the file's columns, its series name, its content hash while it
// still describes the file, and the state of its newest cover.
const FileCols = `f.id, f.library_id, f.relative_path, f.size_bytes, f.mtime_ns, f.format, f.total_pages,
	f.series_id, s.name AS series_name, f.is_missing, f.missing_since,
	CASE WHEN f.hashed_size_bytes = f.size_bytes AND f.hashed_mtime_ns = f.mtime_ns THEN f.hash_algorithm END AS hash_algorithm,
	CASE WHEN f.hashed_size_bytes = f.size_bytes AND f.hashed_mtime_ns = f.mtime_ns THEN f.content_hash END AS content_hash,
	f.analysis_error_code, f.analysis_error_message, f.analyzed_at, f.cover_updated_at, f.sort_key, f.path_key, f.role, f.volumes,
	(SELECT t.status FROM thumbnails t WHERE t.file_id = f.id ORDER BY t.id DESC LIMIT 1) AS cover_status,
	(SELECT CASE WHEN t.status = 'failed' THEN t.error_code END
	 FROM thumbnails t WHERE t.file_id = f.id ORDER BY t.id DESC LIMIT 1) AS cover_error_code,
	(SELECT CASE WHEN t.status = 'failed' THEN t.error_message END
	 FROM thumbnails t WHERE t.file_id = f.id ORDER BY t.id DESC LIMIT 1) AS cover_error_message,
	(SELECT t.id FROM thumbnails t WHERE t.file_id = f.id AND t.status = 'ready' ORDER BY t.id DESC LIMIT 1) AS cover_thumbnail_id,
	f.created_at, f.updated_at`

// LibraryCols selects a model.Library from libraries.
const LibraryCols = `id, name, path, scan_interval_minutes, last_scan_requested_at, allow_delete, allow_unlink, media, watch, created_at, updated_at`

// JobCols selects a model.Job from jobs.
const JobCols = `id, kind, status, library_id, priority, payload, progress, processed_items, total_items,
	result, attempt, retry_after, cancel_requested, worker_id, worker_heartbeat_at, lease_expires_at,
	error_code, error_message, created_at, updated_at, started_at, finished_at, lease_epoch`

// ThumbnailCols selects a model.Thumbnail from thumbnails.
const ThumbnailCols = `id, file_id, library_id, group_key, media_type, format, status, output_relpath, width,
	height, bytes_size, worker_id, worker_heartbeat_at, lease_expires_at, lease_epoch, error_code, error_message,
	error_count, retry_after, created_at, updated_at, started_at, finished_at, task, cover_hash`

// ScanCols selects a model.Scan from scan_sessions.
const ScanCols = `id, job_id, library_id, status, files_seen, directories_seen, bytes_seen, added, changed,
	unchanged, missing, restored, moved, series_created, purged, error_count, error_code, error_message, started_at,
	finished_at`

// VideoProbeCols selects a model.VideoProbe from video_probes.
const VideoProbeCols = `file_id, container, duration_ms, width, height, video_codec, audio_codec, rotation, probed_at`

// MetadataCols selects a model.FileMetadata from file_metadata.
const MetadataCols = `file_id, source, series, number, volume, title, year, month, publisher, genre, tags,
	age_rating, language_iso, writer, penciller, summary, web, front_cover_page, manga, series_count, updated_at`

// UnsettledDelete matches a delete job, not running, that a killed run
// left with intents: files it may have moved that only a run can settle.
const UnsettledDelete = `(status IN ('pending','retryable') AND kind = 'delete'
	AND EXISTS (SELECT 1 FROM delete_intents i WHERE i.job_id = jobs.id))`

// SeriesCols selects a model.Series from series.
const SeriesCols = `id, library_id, name, name_key, publisher, publisher_key, year, summary, file_count, sort_key,
	created_at, updated_at`
