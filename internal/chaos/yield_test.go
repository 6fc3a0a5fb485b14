package chaos

import (
	"archive/zip"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
	"github.com/bindery-nas/bindery/internal/fixtures"
)

// TestHashYieldsToScan runs both daemons on a library whose hash is slowed
// to 1 MB/s, and asks for a scan twice while the hash job runs: once in
// the candidate pass and once in the backfill. Each time the hash job
// yields (it completes with yielded=1 and the scan runs before the hashing
// is done), the rest is hashed afterwards, no file is hashed twice, and the
// duplicate groups include the copy that the scan found.
func TestHashYieldsToScan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real daemons for about 20 s")
	}
	dir := t.TempDir()
	bin, root := filepath.Join(dir, "bin"), filepath.Join(dir, "libraries")
	lib := filepath.Join(root, "comics")
	if err := Build(t.Context(), bin); err != nil { // not timed: see TestBusyStorm
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	books, err := fixtures.Library(lib, fixtures.LibrarySpec{Files: 8})
	if err != nil {
		t.Fatal(err)
	}
	// Distinct sizes, so only the three copies are candidates and the rest
	// is backfill: about 2 s of candidates and 5 s of backfill at 1 MB/s.
	page, err := fixtures.Image(fixtures.JPEG, 64, 96, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		pad := make([]byte, 512<<10+i)
		rand.Read(pad)
		book, err := fixtures.Zip([]fixtures.File{{Name: "001.jpg", Data: page}, {Name: "pad.bin", Data: pad}}, zip.Store)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(lib, "Big", fmt.Sprintf("Big %02d.cbz", i)), book)
		if i < 3 {
			writeFile(t, filepath.Join(lib, "Big", fmt.Sprintf("Big %02d copy.cbz", i)), book)
		}
	}
	c := runCluster(ctx, t, "yield", filepath.Join(dir, "yield"), bin, root)
	lid, err := c.setup(ctx, lib, map[string]any{"io.hash_rate_limit_mb_s": 1})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := checks.OpenRO(c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	defer func() {
		if t.Failed() {
			t.Logf("jobs:\n%s\ncontrold:\n%s\nworkerd:\n%s", dumpJobs(ro), c.control().tail(30), c.worker("w").tail(30))
		}
	}()
	if err := c.requestScan(ctx, lid); err != nil {
		t.Fatal(err)
	}

	// A hash in its candidate pass yields to a scan that finds a new copy.
	hash1 := waitHashRunning(t, ro, 0)
	copyFile(t, filepath.Join(lib, books.Files[0].Path), filepath.Join(lib, "new", "again.cbz"))
	if err := c.requestScan(ctx, lid); err != nil {
		t.Fatal(err)
	}
	waitYielded(t, ro, hash1)
	// Then a hash in its backfill yields too: the groups are complete and
	// files are left to hash.
	var hash2 int64
	waitRow(t, ro, "a hash job in its backfill", func() bool {
		var st struct {
			Status struct {
				Complete        bool  `json:"complete"`
				BackfillPending int64 `json:"backfill_pending"`
			} `json:"status"`
		}
		err := ro.QueryRow(`SELECT id FROM jobs WHERE kind = 'hash' AND status = 'running'`).Scan(&hash2)
		return err == nil && c.api(ctx, "GET", "/duplicates/groups", nil, &st) == nil &&
			st.Status.Complete && st.Status.BackfillPending > 0
	})
	if err := c.requestScan(ctx, lid); err != nil {
		t.Fatal(err)
	}
	waitYielded(t, ro, hash2)

	waitQuiet(t, ro)
	var files, hashed, yields, failed, scanBeforeEnd int64
	err = ro.QueryRow(`SELECT
		(SELECT count(*) FROM library_files WHERE is_missing = 0 AND content_hash IS NOT NULL),
		(SELECT sum(json_extract(result, '$.hashed')) FROM jobs WHERE kind = 'hash'),
		(SELECT count(*) FROM jobs WHERE kind = 'hash' AND json_extract(result, '$.yielded') = 1),
		(SELECT count(*) FROM jobs WHERE status <> 'completed'),
		(SELECT count(*) FROM jobs s WHERE s.kind = 'scan' AND s.finished_at <
			(SELECT max(finished_at) FROM jobs WHERE kind = 'hash'))`).Scan(&files, &hashed, &yields, &failed, &scanBeforeEnd)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(books.Files) + 13 + 1)
	if files != want || hashed != files {
		t.Errorf("%d of %d files hashed, %d digests computed: every file must be hashed exactly once", files, want, hashed)
	}
	if yields < 2 || failed != 0 || scanBeforeEnd != 3 {
		t.Errorf("%d yields, %d jobs not completed, %d scans finished before the last hash: want ≥ 2, 0, 3", yields, failed, scanBeforeEnd)
	}
	var groups struct {
		Items []struct {
			FileCount int `json:"file_count"`
		} `json:"items"`
		Status struct {
			Complete        bool  `json:"complete"`
			BackfillPending int64 `json:"backfill_pending"`
		} `json:"status"`
	}
	if err := c.api(ctx, "GET", "/duplicates/groups?limit=100", nil, &groups); err != nil {
		t.Fatal(err)
	}
	if !groups.Status.Complete || groups.Status.BackfillPending != 0 || len(groups.Items) < 4 {
		t.Errorf("after the last hash: %+v; want complete, nothing left, the 3 copies and the new cbz among the groups", groups)
	}
}

// runCluster starts controld and one workerd, slot "w", over the libraries
// under root (lease 3 s); both are killed when the test ends.
func runCluster(ctx context.Context, t *testing.T, name, dir, bin, root string) *cluster {
	t.Helper()
	c, err := newCluster(name, dir, bin, root, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.killAll)
	if err := c.startControl(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.startWorker("w"); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitHashRunning waits for a running hash job newer than after.
func waitHashRunning(t *testing.T, ro *sql.DB, after int64) int64 {
	t.Helper()
	var id int64
	waitRow(t, ro, "a running hash job", func() bool {
		return ro.QueryRow(`SELECT id FROM jobs WHERE kind = 'hash' AND status = 'running' AND id > ?`, after).Scan(&id) == nil
	})
	return id
}

// waitYielded waits for the hash job id to complete with yielded=1, and
// for a scan job created after it started to run.
func waitYielded(t *testing.T, ro *sql.DB, id int64) {
	t.Helper()
	waitRow(t, ro, fmt.Sprintf("hash job %d yields", id), func() bool {
		var n int
		ro.QueryRow(`SELECT count(*) FROM jobs h WHERE h.id = ? AND h.status = 'completed'
			AND json_extract(h.result, '$.yielded') = 1
			AND EXISTS (SELECT 1 FROM jobs s WHERE s.kind = 'scan' AND s.id > h.id AND s.started_at IS NOT NULL)`, id).Scan(&n)
		return n == 1
	})
}

// waitQuiet waits until no job is open or queued.
func waitQuiet(t *testing.T, ro *sql.DB) {
	t.Helper()
	waitRow(t, ro, "every job done", func() bool {
		var n int
		ro.QueryRow(`SELECT (SELECT count(*) FROM jobs WHERE status IN ('pending','running'))
			+ (SELECT count(*) FROM scan_requests)`).Scan(&n)
		return n == 0
	})
}

// waitRow polls the database until cond holds (a minute at most).
func waitRow(t *testing.T, ro *sql.DB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, data)
}

// dumpJobs lists the jobs and the queue, for a failure message.
func dumpJobs(ro *sql.DB) string {
	rows, err := ro.Query(`SELECT id || ' ' || kind || ' ' || status || ' ' || coalesce(result, '-') || ' ' || created_at || ' ' ||
		coalesce(started_at, '-') || ' ' || coalesce(finished_at, '-') FROM jobs
		UNION ALL SELECT 'queued ' || kind || ' ' || coalesce(library_id, 'all') || ' ' || reason FROM scan_requests`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out string
	for rows.Next() {
		var line string
		rows.Scan(&line)
		out += line + "\n"
	}
	return out
}
