// Package checks is what the crash harness (internal/chaos) reads and
// checks, kept apart from the harness that runs daemons and injects
// faults: the invariants (Check) a run must keep, the database reads
// behind them (read-only handles, the backlog, the lease Sampler, a run's
// RunState against the clean run's), and the library's fixtures whose
// outcome they check (videos, repacked books). It imports no package of
// the harness.
package checks

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/h2non/bimg"

	"github.com/bindery-nas/bindery/internal/store"
)

// Check is one invariant's outcome, printed in the summary.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

func (c Check) String() string {
	mark := "ok  "
	if !c.OK {
		mark = "FAIL"
	}
	return fmt.Sprintf("[%s] %s: %s", mark, c.Name, c.Detail)
}

// CheckTerminal: every job, thumbnail, cleanup and wal row has ended.
func CheckTerminal(ctx context.Context, db *sql.DB) Check {
	var jobs, thumbs, cleanup, wal, total int64
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM jobs WHERE status NOT IN ('completed','failed','cancelled')),
		(SELECT count(*) FROM thumbnails WHERE status NOT IN ('ready','failed')),
		(SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status NOT IN ('completed','failed')),
		(SELECT count(*) FROM wal_maintenance_jobs WHERE status NOT IN ('completed','failed')),
		(SELECT count(*) FROM jobs) + (SELECT count(*) FROM thumbnails)
			+ (SELECT count(*) FROM thumbnail_cleanup_jobs) + (SELECT count(*) FROM wal_maintenance_jobs)`).
		Scan(&jobs, &thumbs, &cleanup, &wal, &total)
	c := Check{Name: "every job/thumbnail/cleanup/wal row terminal"}
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	c.OK = jobs+thumbs+cleanup+wal == 0
	c.Detail = fmt.Sprintf("%d rows; not terminal: jobs %d, thumbnails %d, cleanup %d, wal %d", total, jobs, thumbs, cleanup, wal)
	return c
}

// CheckIntegrity asks the engine whether the database is intact
// (store.CheckIntegrity: PRAGMA integrity_check and foreign_key_check on
// SQLite).
func CheckIntegrity(ctx context.Context, path string) Check {
	c := Check{Name: "engine integrity check"}
	ok, report, err := store.CheckIntegrity(ctx, path)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	c.OK, c.Detail = ok, report
	return c
}

// FileRow is what a file row must be after a scan and a hash, whatever
// happened on the way: compared with a clean run on a copy. Video is the
// file's video_probes row but its probed_at, "" when it has none.
type FileRow struct {
	Path, Format, Series, Publisher, SeriesRaw, Hash, Error, Meta, Video string
	Size, MtimeNS, Pages, Missing, NeedsHash, NeedsAnalysis              int64
}

func readFiles(ctx context.Context, db *sql.DB) (map[string]FileRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT f.relative_path, f.format, s.name, s.publisher, f.series_name_raw,
		f.hash_algorithm, f.content_hash, f.analysis_error_code,
		m.source, m.series, m.number, m.title, m.publisher, m.year,
		v.container, v.duration_ms, v.width, v.height, v.video_codec, v.audio_codec, v.rotation,
		f.size_bytes, f.mtime_ns, coalesce(f.total_pages, -1), f.is_missing, f.needs_hash, f.needs_analysis
		FROM library_files f LEFT JOIN series s ON s.id = f.series_id LEFT JOIN file_metadata m ON m.file_id = f.id
		LEFT JOIN video_probes v ON v.file_id = f.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]FileRow{}
	for rows.Next() {
		var r FileRow
		var format, series, publisher, raw, algo, code nullText
		var hash []byte
		var meta [6]nullText
		var video [7]nullText
		dest := []any{&r.Path, &format, &series, &publisher, &raw, &algo, &hash, &code}
		for i := range meta {
			dest = append(dest, &meta[i])
		}
		for i := range video {
			dest = append(dest, &video[i])
		}
		dest = append(dest, &r.Size, &r.MtimeNS, &r.Pages, &r.Missing, &r.NeedsHash, &r.NeedsAnalysis)
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		r.Format, r.Series, r.Publisher, r.SeriesRaw, r.Error = format.s, series.s, publisher.s, raw.s, code.s
		r.Hash = algo.s + ":" + hex.EncodeToString(hash)
		r.Meta = joinText(meta[:])
		if video[0].valid {
			r.Video = joinText(video[:])
		}
		if _, dup := out[r.Path]; dup {
			return nil, fmt.Errorf("two rows for %q", r.Path)
		}
		out[r.Path] = r
	}
	return out, rows.Err()
}

// nullText scans a nullable column of any type as its text ("" for NULL),
// the same on both engines.
type nullText struct {
	s     string
	valid bool
}

func (n *nullText) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		n.s, n.valid = "", false
		return nil
	case []byte:
		n.s = string(v)
	default:
		n.s = fmt.Sprint(v)
	}
	n.valid = true
	return nil
}

func joinText(cols []nullText) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.s
	}
	return strings.Join(parts, "|")
}

// CompareFiles: the chaos run's rows equal the clean run's, path by path.
func CompareFiles(got, want map[string]FileRow) Check {
	c := Check{Name: "file rows equal a clean single run"}
	var diffs []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+p)
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s: got %+v, want %+v", p, g, w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	sort.Strings(diffs)
	c.OK = len(diffs) == 0 && len(want) > 0
	c.Detail = fmt.Sprintf("%d rows compared (paths, sizes, mtimes, formats, errors, page counts, series, metadata, video probes, hashes), %d differ", len(want), len(diffs))
	if len(diffs) > 0 {
		c.Detail += ": " + strings.Join(diffs[:min(5, len(diffs))], "; ")
	}
	return c
}

// CheckCovers: every ready cover decodes at the size its row records,
// and every other file under covers/ with a final name decodes too (a
// partial file never takes a cover's name: writes are temp + rename).
func CheckCovers(ctx context.Context, db *sql.DB, state string) Check {
	c := Check{Name: "ready covers decode, no partial file at a cover name"}
	rows, err := db.QueryContext(ctx, `SELECT id, output_relpath, coalesce(width,0), coalesce(height,0), coalesce(bytes_size,0)
		FROM thumbnails WHERE status = 'ready'`)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer rows.Close()
	var bad []string
	readyPaths := map[string]bool{}
	for rows.Next() {
		var id, w, h, n int64
		var rel string
		if err := rows.Scan(&id, &rel, &w, &h, &n); err != nil {
			c.Detail = err.Error()
			return c
		}
		p := filepath.Join(state, filepath.FromSlash(rel))
		readyPaths[p] = true
		if err := decodeCover(p, w, h, n); err != nil {
			bad = append(bad, fmt.Sprintf("thumbnail %d: %v", id, err))
		}
	}
	if err := rows.Err(); err != nil {
		c.Detail = err.Error()
		return c
	}
	others := 0
	for _, p := range coverFiles(state, false) {
		if readyPaths[p] {
			continue
		}
		others++
		if err := decodeCover(p, -1, -1, -1); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", p, err))
		}
	}
	c.OK = len(bad) == 0 && len(readyPaths) > 0
	c.Detail = fmt.Sprintf("%d ready covers and %d other cover files decoded", len(readyPaths), others)
	if len(bad) > 0 {
		c.Detail += ": " + strings.Join(bad[:min(5, len(bad))], "; ")
	}
	return c
}

// CheckTemps: no temp file of an interrupted write remains under covers/.
func CheckTemps(state string) Check {
	temps := coverFiles(state, true)
	// A render SIGKILLed between create and rename leaves its .tmp; the
	// recovered row's next render of the same cover removes it.
	c := Check{Name: "no temp file under covers/", OK: len(temps) == 0}
	c.Detail = fmt.Sprintf("%d temp files", len(temps))
	if len(temps) > 0 {
		c.Detail += ": " + strings.Join(temps[:min(5, len(temps))], "; ")
	}
	return c
}

// coverFiles lists the files under <state>/covers: the temp files of an
// atomic write (".<name>.<random>.tmp") when temps, else the others.
func coverFiles(state string, temps bool) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(state, "covers"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		isTemp := strings.HasPrefix(d.Name(), ".") || strings.HasSuffix(d.Name(), ".tmp")
		if isTemp == temps {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// decodeCover decodes the whole image with libvips (a truncated file fails
// here even when its header is intact) and checks it against its row.
func decodeCover(path string, w, h, n int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if n >= 0 && int64(len(b)) != n {
		return fmt.Errorf("%d bytes on disk, row says %d", len(b), n)
	}
	img := bimg.NewImage(b)
	size, err := img.Size()
	if err != nil {
		return fmt.Errorf("decode header: %w", err)
	}
	if w >= 0 && (int64(size.Width) != w || int64(size.Height) != h) {
		return fmt.Errorf("%dx%d, row says %dx%d", size.Width, size.Height, w, h)
	}
	if _, err := img.Process(bimg.Options{Width: 8, Height: 8, Embed: true, Type: bimg.PNG}); err != nil {
		return fmt.Errorf("decode pixels: %w", err)
	}
	return nil
}

// Checksums maps every path under dir to a digest of its content, mode
// and mtime, so that any change under the library is seen.
func Checksums(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum := fmt.Sprintf("%v %d", info.Mode(), info.ModTime().UnixNano())
		if d.Type().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			sum += " " + hex.EncodeToString(h.Sum(nil))
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = sum
		return nil
	})
	return out, err
}

func CompareChecksums(before, after map[string]string) Check {
	c := Check{Name: "library unchanged (sha256 + mode + mtime of every entry)"}
	var diffs []string
	for p, s := range before {
		if after[p] != s {
			diffs = append(diffs, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "new "+p)
		}
	}
	c.OK = len(diffs) == 0
	c.Detail = fmt.Sprintf("%d entries, %d changed", len(before), len(diffs))
	if len(diffs) > 0 {
		c.Detail += ": " + strings.Join(diffs[:min(5, len(diffs))], "; ")
	}
	return c
}

// CopyTree copies a library with its mtimes, for the clean run.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(target, info.ModTime(), info.ModTime())
	})
}
