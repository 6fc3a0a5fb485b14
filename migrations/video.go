package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// addVideo is migration 17 (issue 23): video files are indexed with format
// 'video', probed by ffprobe into video_probes, and get covers through
// thumbnails rows with media_type 'video'. libraries.media turns video
// off for a library ('comics'); the default indexes both. Existing rows
// are untouched: a library's videos are found by its next scan.
func addVideo(ctx context.Context, tx *sql.Tx) error {
	const before, after = `CHECK (format IN ('zip','rar','7z','image','folder'))`,
		`CHECK (format IN ('zip','rar','7z','image','folder','video'))`
	err := rebuildTable(ctx, tx, "library_files", func(create string) (string, error) {
		if !strings.Contains(create, before) {
			return "", fmt.Errorf("library_files has no %s", before)
		}
		return strings.Replace(create, before, after, 1), nil
	})
	if err != nil {
		return fmt.Errorf("video: %w", err)
	}
	for _, stmt := range strings.Split(videoSchema, ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("video: %w", err)
		}
	}
	return guardTimes(ctx, tx, "video_probes")
}

const videoSchema = `
ALTER TABLE libraries ADD COLUMN media TEXT NOT NULL DEFAULT 'comics+video' CHECK (media IN ('comics', 'comics+video'));

-- What ffprobe said of a video file, written by the scan that analysed it
-- (a data-plane table, like file_metadata). No row: not probed, or the
-- probe failed (library_files.analysis_error_code says why).
CREATE TABLE video_probes (
    file_id     INTEGER PRIMARY KEY REFERENCES library_files(id) ON DELETE CASCADE,
    container   TEXT    NOT NULL CHECK (container IN ('mp4', 'mov', 'mkv', 'webm', 'avi', 'mpegts')),
    duration_ms INTEGER NOT NULL CHECK (duration_ms >= 0),
    width       INTEGER CHECK (width IS NULL OR width > 0),
    height      INTEGER CHECK (height IS NULL OR height > 0),
    video_codec TEXT,
    audio_codec TEXT,
    rotation    INTEGER NOT NULL DEFAULT 0 CHECK (rotation IN (0, 90, 180, 270)),
    probed_at   TEXT    NOT NULL
);
`
