package checks

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/protocol"
)

// RunState is what a run left in its database that a clean run must match:
// the file rows (with their metadata and video probes), the cover outcome
// of every file and the duplicate groups.
type RunState struct {
	Files  map[string]FileRow
	Covers map[string]CoverRow // by path and format
	Groups map[string]string   // member paths, one a line → file count and size in duplicate_groups
	// groupsSeen is how many hash groups of two files or more
	// library_files holds (the summary table must list each).
	GroupsSeen int
	SameBooks  map[string]bool // books of one ordered page-digest list, one group a line
}

func ReadState(ctx context.Context, db *sql.DB) (RunState, error) {
	var s RunState
	var err error
	if s.Files, err = readFiles(ctx, db); err != nil {
		return s, err
	}
	if s.Covers, err = readCovers(ctx, db); err != nil {
		return s, err
	}
	if s.SameBooks, err = readSameBooks(ctx, db); err != nil {
		return s, err
	}
	s.Groups, s.GroupsSeen, err = readGroups(ctx, db)
	return s, err
}

// CoverRow is the outcome of a file's newest cover row of one format.
type CoverRow struct {
	Path, Format, MediaType, Status, Error string
	Width, Height                          int64
	// Recovered is how often a worker died holding the row: bookkeeping
	// of the run, not compared.
	Recovered int64
}

// poisoned: the row failed because its worker died MaxRecoveries times
// while rendering it (the poison-pill rule), which SIGKILLs may cause.
func (c CoverRow) poisoned() bool {
	return c.Status == string(protocol.ThumbFailed) && c.Error == protocol.ErrRenderCrashed && c.Recovered >= leases.MaxRecoveries
}

// outcome is what is compared with the clean run.
func (c CoverRow) outcome() string {
	return fmt.Sprintf("%s %s %s %dx%d", c.MediaType, c.Status, c.Error, c.Width, c.Height)
}

func readCovers(ctx context.Context, db *sql.DB) (map[string]CoverRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT f.relative_path, t.format, t.media_type, t.status, coalesce(t.error_code,''),
		coalesce(t.width,0), coalesce(t.height,0), t.recovered_count
		FROM thumbnails t JOIN library_files f ON f.id = t.file_id
		WHERE t.id = (SELECT max(b.id) FROM thumbnails b WHERE b.file_id = t.file_id AND b.format = t.format)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]CoverRow{}
	for rows.Next() {
		var c CoverRow
		if err := rows.Scan(&c.Path, &c.Format, &c.MediaType, &c.Status, &c.Error, &c.Width, &c.Height, &c.Recovered); err != nil {
			return nil, err
		}
		out[c.Path+" ("+c.Format+")"] = c
	}
	return out, rows.Err()
}

// CompareCovers: every file has the cover outcome it has after a clean
// run (media type, status, error code, size). The one accepted difference
// is a cover whose worker was SIGKILLed MaxRecoveries times while it
// rendered it: the poison-pill rule fails it with render_crashed.
func CompareCovers(got, want map[string]CoverRow) Check {
	c := Check{Name: "cover outcomes equal a clean single run"}
	var diffs []string
	poisoned := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, "no cover row for "+k)
		case g.poisoned():
			poisoned++
		case g.outcome() != w.outcome():
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", k, g.outcome(), w.outcome()))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "extra cover row for "+k)
		}
	}
	sort.Strings(diffs)
	c.OK = len(diffs) == 0 && len(want) > 0
	c.Detail = fmt.Sprintf("%d files' covers compared (media type, status, error code, size), %d differ, %d failed render_crashed after %d worker deaths",
		len(want), len(diffs), poisoned, leases.MaxRecoveries)
	if len(diffs) > 0 {
		c.Detail += ": " + strings.Join(diffs[:min(5, len(diffs))], "; ")
	}
	return c
}

// readGroups reads duplicate_groups' groups of two files or more, keyed
// by their member paths, and counts the hash groups of library_files.
func readGroups(ctx context.Context, db *sql.DB) (map[string]string, int, error) {
	rows, err := db.QueryContext(ctx, `SELECT g.hash_algorithm, g.content_hash, g.file_count, g.total_size_bytes,
			coalesce(f.relative_path, '')
		FROM duplicate_groups g LEFT JOIN library_files f ON f.hash_algorithm = g.hash_algorithm
			AND f.content_hash = g.content_hash AND f.is_missing = 0 AND f.needs_hash = 0
		WHERE g.file_count > 1 ORDER BY g.hash_algorithm, g.content_hash, f.relative_path`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	type group struct {
		summary string
		members []string
	}
	var groups []*group
	last := ""
	for rows.Next() {
		var algo, path string
		var hash []byte
		var n, size int64
		if err := rows.Scan(&algo, &hash, &n, &size, &path); err != nil {
			return nil, 0, err
		}
		if key := algo + string(hash); key != last || len(groups) == 0 {
			groups, last = append(groups, &group{summary: fmt.Sprintf("%d files, %d bytes", n, size)}), key
		}
		if g := groups[len(groups)-1]; path != "" {
			g.members = append(g.members, path)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	out := map[string]string{}
	for _, g := range groups {
		out[strings.Join(g.members, "\n")] = g.summary
	}
	var seen int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM library_files
		WHERE is_missing = 0 AND needs_hash = 0 AND hash_algorithm IS NOT NULL AND content_hash IS NOT NULL
		GROUP BY hash_algorithm, content_hash HAVING count(*) > 1) AS g`).Scan(&seen)
	return out, seen, err
}

// CompareGroups: the duplicate groups (members, count, size) equal the
// clean run's, and the summary table lists every hash group of
// library_files with its true member count.
func CompareGroups(got, want RunState) Check {
	c := Check{Name: "duplicate groups equal a clean single run"}
	var diffs []string
	for m, w := range want.Groups {
		if g, ok := got.Groups[m]; !ok || g != w {
			diffs = append(diffs, fmt.Sprintf("[%s]: got %q, want %s", members(m), g, w))
		}
	}
	for m, g := range got.Groups {
		if _, ok := want.Groups[m]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra [%s] %s", members(m), g))
		}
		if n := strings.Count(m, "\n") + 1; m == "" || !strings.HasPrefix(g, fmt.Sprintf("%d files", n)) {
			diffs = append(diffs, fmt.Sprintf("[%s] lists %d paths, summary says %s", members(m), n, g))
		}
	}
	if got.GroupsSeen != len(got.Groups) {
		diffs = append(diffs, fmt.Sprintf("library_files has %d hash groups of two or more, duplicate_groups %d", got.GroupsSeen, len(got.Groups)))
	}
	sort.Strings(diffs)
	c.OK = len(diffs) == 0
	c.Detail = fmt.Sprintf("%d groups compared (member paths, file count, total size), %d differ", len(want.Groups), len(diffs))
	if len(diffs) > 0 {
		c.Detail += ": " + strings.Join(diffs[:min(5, len(diffs))], "; ")
	}
	return c
}

func members(key string) string { return strings.ReplaceAll(key, "\n", ", ") }

// CheckVideos: every video of the library was indexed as its kind must
// be: format video, the analysis error and probe it must have, the cover
// outcome it must have, exact copies in one duplicate group of their own.
// The comparison with the clean run says the faults changed nothing; this
// says that both runs did index the videos.
func CheckVideos(s RunState, vids []VideoFile) Check {
	c := Check{Name: "videos indexed as their kind requires (probe, error, cover, duplicates)"}
	var bad []string
	counts := map[string]int{}
	for _, v := range vids {
		if err := checkVideo(s, v); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", v.Rel, err))
		}
		switch {
		case v.Error != "":
			counts["unreadable"]++
		case v.Cover == "ready":
			counts["ready covers"]++
		case v.Cover != "":
			counts["failed covers"]++
		default:
			counts["no cover"]++
		}
		if v.DupOf != "" {
			counts["exact copies"]++
		}
	}
	c.OK = len(bad) == 0
	c.Detail = fmt.Sprintf("%d videos: %d with a ready cover, %d whose cover fails, %d without a picture, %d unreadable, %d exact copies",
		len(vids), counts["ready covers"], counts["failed covers"], counts["no cover"], counts["unreadable"], counts["exact copies"])
	if len(vids) == 0 {
		c.Detail = "no videos in the library (Config.Videos < 0)"
	}
	if len(bad) > 0 {
		c.Detail += "; wrong: " + strings.Join(bad[:min(5, len(bad))], "; ")
	}
	return c
}

func checkVideo(s RunState, v VideoFile) error {
	f, ok := s.Files[v.Rel]
	switch {
	case !ok:
		return fmt.Errorf("no file row")
	case f.Format != string(protocol.FormatVideo):
		return fmt.Errorf("format %q", f.Format)
	case f.Error != v.Error:
		return fmt.Errorf("analysis error %q, want %q", f.Error, v.Error)
	}
	p := strings.Split(f.Video, "|") // container|duration|width|height|video codec|audio codec|rotation
	switch {
	case v.Container == "" && f.Video != "":
		return fmt.Errorf("probe %s, want none", f.Video)
	case v.Container == "":
	case len(p) != 7 || p[0] != v.Container || p[1] == "0":
		return fmt.Errorf("probe %q, want container %s and a duration", f.Video, v.Container)
	case v.Picture != (p[2] != "" && p[4] != ""):
		return fmt.Errorf("probe %q: picture %v", f.Video, !v.Picture)
	case v.Rotated != (p[6] != "0"):
		return fmt.Errorf("probe %q: rotated %v", f.Video, !v.Rotated)
	}
	covers := 0
	for _, cv := range s.Covers {
		if cv.Path != v.Rel {
			continue
		}
		covers++
		want := "ready"
		if v.Cover != "ready" {
			want = "failed " + v.Cover
		}
		if got := strings.TrimSpace(cv.Status + " " + cv.Error); cv.MediaType != string(protocol.MediaVideo) || (got != want && !cv.poisoned()) {
			return fmt.Errorf("%s cover %s %s, want video %s", cv.Format, cv.MediaType, got, want)
		}
	}
	if (covers > 0) != (v.Cover != "") {
		return fmt.Errorf("%d cover rows, want a cover: %v", covers, v.Cover != "")
	}
	if v.DupOf != "" {
		if o := s.Files[v.DupOf]; f.Hash == ":" || f.Hash != o.Hash {
			return fmt.Errorf("hash %s, its original %s has %s", f.Hash, v.DupOf, o.Hash)
		}
		if _, ok := s.Groups[v.DupOf+"\n"+v.Rel]; !ok {
			if _, ok := s.Groups[v.Rel+"\n"+v.DupOf]; !ok {
				return fmt.Errorf("no duplicate group of exactly it and %s", v.DupOf)
			}
		}
	}
	return nil
}
