package scan

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// env is one migrated database with one library folder and a scanner that
// writes through a workerd (whitelisted) connection.
type env struct {
	t       testing.TB
	control *store.Store
	worker  *store.Store
	dbPath  string
	root    string
	lib     int64
	clock   *safeClock
	exec    *Executor
}

// safeClock is a settable clock safe to read from the store's goroutines.
type safeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *safeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *safeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func setup(t testing.TB) *env {
	t.Helper()
	path := storetest.MustMigrate(t)
	clock := &safeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := &env{t: t, dbPath: path, clock: clock, root: filepath.Join(t.TempDir(), "library")}
	e.control = storetest.MustOpen(t, path, store.RoleControl, clock.Now)
	e.worker = storetest.MustOpen(t, path, store.RoleWorker, clock.Now)
	if err := os.MkdirAll(e.root, 0o755); err != nil {
		t.Fatal(err)
	}
	lib, err := e.control.CreateLibrary(context.Background(), store.NewLibrary{Name: "comics", Path: e.root})
	if err != nil {
		t.Fatal(err)
	}
	e.lib = lib.ID
	e.exec = New(e.worker, Config{BatchSize: 7})
	return e
}

func (e *env) set(kv map[string]string) {
	e.t.Helper()
	if err := e.control.PutSettings(context.Background(), kv); err != nil {
		e.t.Fatal(err)
	}
}

// testLease outlives every clock jump of these tests.
const testLease = 10 * 365 * 24 * time.Hour

// job inserts a scan job row and claims it as the engine would, so that the
// scan's writes carry a live fence; the previous test job, still running
// (nobody finishes it here), is completed first to free the single-active
// slot.
func (e *env) job(payload string) model.Job {
	e.t.Helper()
	ctx := context.Background()
	now := protocol.FormatTime(e.clock.Now())
	if _, err := storetest.Exec(ctx, e.control, `UPDATE jobs SET status = 'completed', lease_expires_at = NULL, finished_at = ?
		WHERE status = 'running'`, now); err != nil {
		e.t.Fatal(err)
	}
	if _, err := storetest.Exec(ctx, e.control, `INSERT INTO jobs (kind, status, library_id, payload, created_at, updated_at)
		VALUES ('scan', 'pending', ?, ?, ?, ?)`, e.lib, payload, now, now); err != nil {
		e.t.Fatal(err)
	}
	job, err := leases.New(e.worker).ClaimJob(ctx, "scan-test", testLease)
	if err != nil || job == nil {
		e.t.Fatalf("claim: %v, %v", job, err)
	}
	return *job
}

// scan runs one scan to completion and returns its counts.
func (e *env) scan() model.ScanCounts {
	e.t.Helper()
	e.clock.Advance(time.Second)
	res, err := e.exec.Execute(context.Background(), e.job("{}"), nil)
	if err != nil {
		e.t.Fatalf("scan: %v", err)
	}
	return countsOf(res)
}

func countsOf(m map[string]int64) model.ScanCounts {
	return model.ScanCounts{FilesSeen: m["files_seen"], DirectoriesSeen: m["directories_seen"], BytesSeen: m["bytes_seen"],
		Added: m["added"], Changed: m["changed"], Unchanged: m["unchanged"], Missing: m["missing"],
		Restored: m["restored"], Moved: m["moved"], SeriesCreated: m["series_created"], Purged: m["purged"],
		ErrorCount: m["error_count"]}
}

// file writes data at rel under the library with a fixed mtime.
func (e *env) file(rel string, data []byte, mtime time.Time) {
	e.t.Helper()
	p := filepath.Join(e.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		e.t.Fatal(err)
	}
}

var t0 = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// cbz builds a zip with the named entries (images get tiny JPEG bodies) and
// an optional ComicInfo.xml at the root.
func cbz(t testing.TB, comicInfo string, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, data []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: t0})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	for _, n := range names {
		add(n, append([]byte("\xff\xd8\xff\xe0"), n...))
	}
	if comicInfo != "" {
		add("ComicInfo.xml", []byte(comicInfo))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pages returns n page names.
func pages(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("page %d.jpg", i+1)
	}
	return out
}

// ci renders a ComicInfo.xml with the given elements ("Series", "Batman", ...).
func ci(kv ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><ComicInfo>`)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "<%s>%s</%s>", kv[i], kv[i+1], kv[i])
	}
	b.WriteString("</ComicInfo>")
	return b.String()
}

// db opens a read-only view for assertions.
func (e *env) db() *sql.DB {
	e.t.Helper()
	db, err := store.OpenReadOnly(e.dbPath)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	return db
}

// rows runs a query and renders every row as one "|"-joined line.
func (e *env) rows(query string, args ...any) []string {
	e.t.Helper()
	db := e.db()
	rs, err := db.Query(query, args...)
	if err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			e.t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts[i] = "NULL"
			case []byte:
				parts[i] = string(x)
			default:
				parts[i] = fmt.Sprint(x)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rs.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) one(query string, args ...any) string {
	e.t.Helper()
	r := e.rows(query, args...)
	if len(r) != 1 {
		e.t.Fatalf("%s: want one row, got %v", query, r)
	}
	return r[0]
}

// dump is the canonical state of the library's rows, without ids and
// timestamps, for comparing two scans.
func (e *env) dump() string {
	e.t.Helper()
	var b strings.Builder
	for _, r := range e.rows(`SELECT f.relative_path, f.size_bytes, f.mtime_ns, f.format, f.total_pages,
			f.series_name_raw, s.name, s.publisher, f.is_missing, f.needs_analysis, f.needs_hash, f.needs_cover,
			f.analysis_error_code, ` + storetest.Hex("f.content_hash") + `, f.missing_since IS NOT NULL
		FROM library_files f LEFT JOIN series s ON s.id = f.series_id ORDER BY f.relative_path`) {
		b.WriteString("file " + r + "\n")
	}
	for _, r := range e.rows(`SELECT name, name_key, publisher, publisher_key, year, file_count FROM series
		ORDER BY name_key, publisher_key`) {
		b.WriteString("series " + r + "\n")
	}
	for _, r := range e.rows(`SELECT f.relative_path, m.source, m.series, m.number, m.volume, m.title, m.year, m.month,
			m.publisher, m.genre, m.tags, m.age_rating, m.language_iso, m.writer, m.penciller, m.summary, m.web,
			m.front_cover_page, m.manga, m.series_count
		FROM file_metadata m JOIN library_files f ON f.id = m.file_id ORDER BY f.relative_path`) {
		b.WriteString("meta " + r + "\n")
	}
	return b.String()
}
