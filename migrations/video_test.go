package migrations

import (
	"context"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// TestVideoMigration: a database at version 16 keeps its files, ids,
// hashes, plan references and triggers through migration 17's rebuild;
// libraries index video by default; format 'video' and video_probes are
// accepted and their CHECKs hold, and a probe goes with its file.
func TestVideoMigration(t *testing.T) {
	ctx := context.Background()
	db, p := migratedTo(t, 16)
	const now = "2026-01-01 00:00:00.000"
	exec := func(t *testing.T, q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(t, `INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'l', '/l', ?, ?)`, now, now)
	exec(t, `INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, format, hash_algorithm,
		content_hash, needs_hash, created_at, updated_at) VALUES (5, 1, 'a/b.cbz', 10, 1, 'zip', 'blake3', zeroblob(32), 0, ?, ?)`, now, now)
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var media, file string
	if err := db.QueryRowContext(ctx, `SELECT media FROM libraries WHERE id = 1`).Scan(&media); err != nil || media != "comics+video" {
		t.Fatalf("media %q, %v", media, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT id || ' ' || format || ' ' || hex(content_hash) FROM library_files`).Scan(&file); err != nil ||
		file != "5 zip "+"0000000000000000000000000000000000000000000000000000000000000000" {
		t.Fatalf("file kept as %q, %v", file, err)
	}
	exec(t, `INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, format, created_at, updated_at)
		VALUES (6, 1, 'a/ep.mkv', 10, 1, 'video', ?, ?)`, now, now)
	exec(t, `INSERT INTO video_probes (file_id, container, duration_ms, width, height, video_codec, rotation, probed_at)
		VALUES (6, 'mkv', 1000, 1920, 1080, 'h264', 90, ?)`, now)
	for _, q := range []string{
		`UPDATE libraries SET media = 'video' WHERE id = 1`,
		`UPDATE libraries SET media = 'Comics' WHERE id = 1`,
		`UPDATE library_files SET format = 'mp4' WHERE id = 6`,
		`UPDATE video_probes SET container = 'MKV' WHERE file_id = 6`,
		`UPDATE video_probes SET rotation = -90 WHERE file_id = 6`,
		`UPDATE video_probes SET width = 0 WHERE file_id = 6`,
		`UPDATE video_probes SET probed_at = 'now' WHERE file_id = 6`,
	} {
		if _, err := db.ExecContext(ctx, q); err == nil {
			t.Errorf("accepted: %s", q)
		}
	}
	exec(t, `PRAGMA foreign_keys = ON`)
	exec(t, `DELETE FROM library_files WHERE id = 6`)
	var probes int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM video_probes`).Scan(&probes); err != nil || probes != 0 {
		t.Fatalf("%d probes outlived their file (%v)", probes, err)
	}
}
