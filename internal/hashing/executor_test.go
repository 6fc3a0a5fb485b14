package hashing

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

type env struct {
	ctx     context.Context
	path    string // the database
	control *store.Store
	worker  *store.Store
	clock   *storetest.Clock
	root    string // LibraryRoot
	lib     string // the library's folder
	exec    *Executor
	job     model.Job
}

// progress records the reporter's calls.
type progress struct {
	mu    sync.Mutex
	calls [][2]int64
}

func (p *progress) Progress(processed, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, [2]int64{processed, total})
}

func setup(t *testing.T) *env {
	t.Helper()
	db := storetest.MustOpenClockedDB(t)
	e := &env{ctx: context.Background(), path: db.Path, control: db.Control, worker: db.Worker, clock: db.Clock, root: t.TempDir()}
	e.lib = filepath.Join(e.root, "comics")
	if err := os.Mkdir(e.lib, 0o755); err != nil {
		t.Fatal(err)
	}
	testfactory.Library(t, e.control, &testfactory.LibraryOpts{ID: 1, Name: "comics", Path: e.lib})
	e.exec = New(e.worker, Config{LibraryRoots: pathsafe.Roots{e.root}, BatchSize: 4, RetryBase: time.Minute})
	e.job = claimHashJob(t, e.control, e.worker)
	return e
}

// claimHashJob inserts a hash job of library 1 and claims it as the engine
// would, with a lease that outlives every clock jump of these tests, so
// that the executor's writes carry a live fence.
func claimHashJob(t testing.TB, control, worker *store.Store) model.Job {
	t.Helper()
	ctx := context.Background()
	if _, err := storetest.Exec(ctx, control, `INSERT INTO jobs (kind, status, library_id, created_at, updated_at)
		VALUES ('hash', 'pending', 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`); err != nil {
		t.Fatal(err)
	}
	job, err := leases.New(worker).ClaimJob(ctx, "hash-test", 10*365*24*time.Hour)
	if err != nil || job == nil {
		t.Fatalf("claim: %v, %v", job, err)
	}
	return *job
}

// addFile writes data at rel under the library and registers it as the
// scanner would (size and mtime from stat, needs_hash = 1).
func (e *env) addFile(t *testing.T, rel string, data []byte) int64 {
	t.Helper()
	p := filepath.Join(e.lib, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return e.register(t, rel)
}

func (e *env) register(t *testing.T, rel string) int64 {
	t.Helper()
	var size, mtime int64
	if fi, err := os.Lstat(filepath.Join(e.lib, rel)); err == nil {
		size, mtime = fi.Size(), fi.ModTime().UnixNano()
		if !fi.Mode().IsRegular() {
			size = 0
		}
	}
	id, err := storetest.InsertID(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
		created_at, updated_at) VALUES (1, ?, ?, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`, rel, size, mtime)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (e *env) run(t *testing.T, ctx context.Context) (map[string]int64, *progress, error) {
	t.Helper()
	p := &progress{}
	res, err := e.exec.Execute(ctx, e.job, p)
	return res, p, err
}

type hashRow struct {
	Alg        sql.NullString
	Sum        []byte
	NeedsHash  bool
	HSize      sql.NullInt64
	HMtime     sql.NullInt64
	ErrCount   int64
	LastError  sql.NullString
	RetryAfter protocol.NullTime
}

func (e *env) row(t *testing.T, id int64) hashRow {
	t.Helper()
	h, err := hashes.New(e.control).HashState(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return hashRow{h.HashAlgorithm, h.ContentHash, h.NeedsHash, h.HashedSizeBytes, h.HashedMtimeNS,
		h.HashErrorCount, h.HashLastError, h.HashRetryAfter}
}

func TestExecute(t *testing.T) {
	t.Parallel()
	t.Run("hashes due files and groups duplicates", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		data := map[string][]byte{
			"a.cbz": []byte("same bytes"), "b/c.cbz": []byte("same bytes"), "d.cbz": {},
			"e.cbz": bytes.Repeat([]byte{7}, 3*bufSize+5), "f.cbz": []byte("other"),
		}
		ids := map[string]int64{}
		for rel, d := range data {
			ids[rel] = e.addFile(t, rel, d)
		}
		res, p, err := e.run(t, e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res["hashed"] != 5 || res["failed"] != 0 || res["skipped_changed"] != 0 || res["bytes"] != int64(3*bufSize+5+10+10+5) {
			t.Fatalf("result %v", res)
		}
		if last := p.calls[len(p.calls)-1]; last != [2]int64{5, 5} {
			t.Fatalf("last progress %v, want [5 5]", last)
		}
		for rel, id := range ids {
			r := e.row(t, id)
			want := refSum(protocol.HashBLAKE3, data[rel])
			fi, _ := os.Stat(filepath.Join(e.lib, rel))
			if r.NeedsHash || r.Alg.String != "blake3" || !bytes.Equal(r.Sum, want) ||
				r.HSize.Int64 != fi.Size() || r.HMtime.Int64 != fi.ModTime().UnixNano() {
				t.Fatalf("%s: row %+v, want blake3 %x", rel, r, want)
			}
		}
		groups, err := duplicates.New(e.worker).DuplicateGroups(e.ctx, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) != 1 || groups[0].FileCount != 2 || groups[0].TotalSizeBytes != 20 || groups[0].WastedBytes != 10 {
			t.Fatalf("groups %+v", groups)
		}
		res, _, err = e.run(t, e.ctx)
		if err != nil || res["hashed"] != 0 {
			t.Fatalf("second run: %v %v, want nothing due", res, err)
		}
	})

	t.Run("symlinks that stay inside the library are followed", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		a := e.addFile(t, "a.cbz", []byte("content"))
		// Absolute target: the kernel's RESOLVE_BENEATH refuses it, the
		// pathsafe fallback admits it because it lands inside the library.
		os.Symlink(filepath.Join(e.lib, "a.cbz"), filepath.Join(e.lib, "abs.cbz"))
		os.Symlink("a.cbz", filepath.Join(e.lib, "rel.cbz"))
		abs, rel := e.register(t, "abs.cbz"), e.register(t, "rel.cbz")
		for _, id := range []int64{abs, rel} { // the scanner records the target's stat
			if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET (size_bytes, mtime_ns) =
				(SELECT size_bytes, mtime_ns FROM library_files WHERE id = ?) WHERE id = ?`, a, id); err != nil {
				t.Fatal(err)
			}
		}
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["hashed"] != 3 {
			t.Fatalf("run: %v %v", res, err)
		}
		want := refSum(protocol.HashBLAKE3, []byte("content"))
		for _, id := range []int64{a, abs, rel} {
			if r := e.row(t, id); !bytes.Equal(r.Sum, want) {
				t.Fatalf("file %d: %+v", id, r)
			}
		}
	})

	t.Run("algorithm change rehashes lazily", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		id := e.addFile(t, "a.cbz", []byte("abc"))
		if _, _, err := e.run(t, e.ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.control.PutSettings(e.ctx, map[string]string{"hash.algorithm": "sha256"}); err != nil {
			t.Fatal(err)
		}
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["hashed"] != 1 {
			t.Fatalf("rehash: %v %v", res, err)
		}
		if r := e.row(t, id); r.Alg.String != "sha256" || !bytes.Equal(r.Sum, refSum(protocol.HashSHA256, []byte("abc"))) {
			t.Fatalf("row %+v", r)
		}
	})

	t.Run("unreadable files back off and do not fail the job", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		ok := e.addFile(t, "ok.cbz", []byte("fine"))
		if err := syscall.Mkfifo(filepath.Join(e.lib, "fifo.cbz"), 0o644); err != nil {
			t.Fatal(err)
		}
		fifo := e.register(t, "fifo.cbz")
		gone := e.addFile(t, "gone.cbz", []byte("soon gone"))
		os.Remove(filepath.Join(e.lib, "gone.cbz"))
		if err := os.Symlink("/etc/hostname", filepath.Join(e.lib, "escape.cbz")); err != nil {
			t.Fatal(err)
		}
		escape := e.register(t, "escape.cbz")

		res, _, err := e.run(t, e.ctx)
		if err != nil || res["hashed"] != 1 || res["failed"] != 3 {
			t.Fatalf("run: %v %v", res, err)
		}
		if r := e.row(t, ok); r.NeedsHash {
			t.Fatal("ok file not hashed")
		}
		wantCode := map[int64]string{fifo: protocol.ErrPathViolation, gone: protocol.ErrSourceMissing, escape: protocol.ErrSymlinkEscape}
		for id, code := range wantCode {
			r := e.row(t, id)
			if !r.NeedsHash || r.ErrCount != 1 || !strings.HasPrefix(r.LastError.String, code) ||
				r.RetryAfter.String() != protocol.FormatTime(e.clock.Now().Add(time.Minute)) {
				t.Fatalf("file %d: row %+v, want %s with 1m backoff", id, r, code)
			}
		}
		// Within the backoff the files are not even attempted.
		res, _, err = e.run(t, e.ctx)
		if err != nil || res["failed"] != 0 || res["hashed"] != 0 {
			t.Fatalf("run within backoff: %v %v", res, err)
		}
		// After it, they fail again and the backoff doubles.
		e.clock.Advance(time.Minute)
		if res, _, err = e.run(t, e.ctx); err != nil || res["failed"] != 3 {
			t.Fatalf("run after backoff: %v %v", res, err)
		}
		if r := e.row(t, fifo); r.ErrCount != 2 || r.RetryAfter.String() != protocol.FormatTime(e.clock.Now().Add(2*time.Minute)) {
			t.Fatalf("second failure: %+v", r)
		}
		// A file that is readable again is hashed and its errors cleared.
		os.Remove(filepath.Join(e.lib, "fifo.cbz"))
		os.WriteFile(filepath.Join(e.lib, "fifo.cbz"), nil, 0o644)
		fi, _ := os.Stat(filepath.Join(e.lib, "fifo.cbz"))
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET mtime_ns = ? WHERE id = ?`, fi.ModTime().UnixNano(), fifo); err != nil {
			t.Fatal(err) // what the next scan records
		}
		e.clock.Advance(2 * time.Minute)
		if _, _, err := e.run(t, e.ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.row(t, fifo); r.NeedsHash || r.ErrCount != 0 || r.LastError.Valid || r.RetryAfter.Valid {
			t.Fatalf("recovered file: %+v", r)
		}
	})

	t.Run("file modified while read stays due", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		id := e.addFile(t, "grow.cbz", bytes.Repeat([]byte("x"), 2*bufSize))
		e.exec.afterRead = func(path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			f.Write([]byte("more"))
			f.Close()
		}
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["skipped_changed"] != 1 || res["hashed"] != 0 {
			t.Fatalf("run: %v %v", res, err)
		}
		if r := e.row(t, id); !r.NeedsHash || r.Sum != nil || r.ErrCount != 0 {
			t.Fatalf("row %+v, want still due without error", r)
		}
	})

	t.Run("file changed since the scan is not stored", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		id := e.addFile(t, "a.cbz", []byte("v1"))
		os.WriteFile(filepath.Join(e.lib, "a.cbz"), []byte("version 2"), 0o644)
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["skipped_changed"] != 1 || res["hashed"] != 0 {
			t.Fatalf("run: %v %v", res, err)
		}
		if r := e.row(t, id); !r.NeedsHash {
			t.Fatal("hash stored for a row describing another version")
		}
	})

	t.Run("cancel mid-batch keeps finished work and resumes", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.exec.cfg.BatchSize = 50
		// One reader, so the cancel at the fifth read stops the run there:
		// with the default sixteen, all twenty reads may start first.
		if err := e.control.PutSettings(e.ctx, map[string]string{"hash.io_depth": "1"}); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for i := range 20 {
			ids = append(ids, e.addFile(t, fmt.Sprintf("f%02d.cbz", i), bytes.Repeat([]byte{byte(i)}, 1000+i)))
		}
		ctx, cancel := context.WithCancel(e.ctx)
		var mu sync.Mutex
		reads := 0
		e.exec.afterRead = func(string) {
			mu.Lock()
			defer mu.Unlock()
			if reads++; reads == 5 {
				cancel()
			}
		}
		res, _, err := e.run(t, ctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		first := res["hashed"]
		if first < 1 || first >= 20 {
			t.Fatalf("hashed %d before cancel, want some but not all", first)
		}
		e.exec.afterRead = nil
		res, _, err = e.run(t, e.ctx)
		if err != nil || first+res["hashed"] != 20 {
			t.Fatalf("resume: %v %v (first run hashed %d)", res, err, first)
		}
		for i, id := range ids {
			if r := e.row(t, id); r.NeedsHash || !bytes.Equal(r.Sum, refSum(protocol.HashBLAKE3, bytes.Repeat([]byte{byte(i)}, 1000+i))) {
				t.Fatalf("file %d: %+v", i, r)
			}
		}
	})

	t.Run("a write slower than FlushTimeout is kept while the job lives", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.exec.cfg.FlushTimeout = 20 * time.Millisecond
		data := []byte("written while the database is busy")
		id := e.addFile(t, "slow.cbz", data)
		release := holdWrites(t, e.ctx, e.path)
		time.AfterFunc(300*time.Millisecond, release)
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["hashed"] != 1 {
			t.Fatalf("%v %v", res, err)
		}
		if r := e.row(t, id); r.NeedsHash || !bytes.Equal(r.Sum, refSum(protocol.HashBLAKE3, data)) {
			t.Fatalf("row %+v", r)
		}
	})

	t.Run("cancel inside a large file", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.exec.cfg.LargeFileBytes = bufSize
		e.addFile(t, "big.cbz", make([]byte, 8*bufSize))
		ctx, cancel := context.WithCancel(e.ctx)
		e.exec.st = e.worker
		calls := 0
		rateHook := func(n int64) error { // cancel after the first MiB
			if calls++; calls == 2 {
				cancel()
			}
			return nil
		}
		r, err := e.exec.start(e.ctx, e.job)
		if err != nil {
			t.Fatal(err)
		}
		defer r.close()
		f, _ := os.Open(filepath.Join(e.lib, "big.cbz"))
		defer f.Close()
		n, err := copyHash(ctx, r.newHasher(true), f, rateHook)
		if !errors.Is(err, context.Canceled) || n >= 8*bufSize {
			t.Fatalf("copy read %d bytes, err %v; want an early context.Canceled", n, err)
		}
	})

	t.Run("reads draw from the shared io budget", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.addFile(t, "a.cbz", make([]byte, 10_000))
		if err := e.control.PutSettings(e.ctx, map[string]string{"io.hash_rate_limit_mb_s": "1"}); err != nil {
			t.Fatal(err)
		}
		if res, _, err := e.run(t, e.ctx); err != nil || res["hashed"] != 1 {
			t.Fatalf("run: %v %v", res, err)
		}
		// One slice of 100 ms at 1 MB/s was reserved from the shared bucket.
		next, err := storetest.QueryInt(e.ctx, e.control, `SELECT next_available_at_ms FROM io_rate_limits WHERE bucket_key = ?`, IOBucket)
		if err != nil {
			t.Fatal(err)
		}
		if want := e.clock.Now().UnixMilli() + 100; next != want {
			t.Fatalf("next_available_at_ms = %d, want %d", next, want)
		}
	})

	t.Run("library outside the root fails the job", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		outside := t.TempDir()
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE libraries SET path = ? WHERE id = 1`, outside); err != nil {
			t.Fatal(err)
		}
		_, _, err := e.run(t, e.ctx)
		if protocol.CodeOf(err, "") != protocol.ErrPathViolation {
			t.Fatalf("err = %v, want %s", err, protocol.ErrPathViolation)
		}
	})
}

// holdWrites blocks every write to library_files of the database at path,
// reads still answering, until release is called: a transaction of its own
// holding SQLite's write lock, or on PostgreSQL a table lock that UPDATE
// waits for.
func holdWrites(t *testing.T, ctx context.Context, path string) (release func()) {
	t.Helper()
	db, err := store.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lock := []string{`BEGIN IMMEDIATE`}
	if store.IsPostgres(path) {
		lock = []string{`BEGIN`, `LOCK TABLE library_files IN SHARE ROW EXCLUSIVE MODE`}
	}
	for _, q := range lock {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			conn.ExecContext(ctx, `ROLLBACK`)
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}
