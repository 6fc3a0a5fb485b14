package scan

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// Faults of the library file system a NAS really shows (issue 11): a
// read-only mount, entries that cannot be read as files, files that vanish
// or change while they are read, symlink loops, huge folders and names in
// every normal form. The scan must finish, record what it could not read,
// and leave a state that a later scan of the settled tree agrees with.

// scanWithin runs a scan that must end within d: a FIFO opened for reading
// would block forever, so a hang is a failure, not a timeout of the suite.
func (e *env) scanWithin(d time.Duration) (counts map[string]int64, err error) {
	e.t.Helper()
	e.clock.Advance(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		counts, err = e.exec.Execute(ctx, e.job("{}"), nil)
	}()
	select {
	case <-done:
		return counts, err
	case <-time.After(d + 5*time.Second):
		e.t.Fatalf("scan did not return within %v (hung on a special file?)", d)
		return nil, nil
	}
}

// bindReadOnly bind-mounts dir read-only over itself, or skips.
func bindReadOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "read-only bind mount needs root")
	}
	if out, err := exec.Command("mount", "--bind", dir, dir).CombinedOutput(); err != nil {
		testutil.SkipUnlessCI(t, "bind mount not permitted here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", dir).CombinedOutput(); err != nil {
		testutil.SkipUnlessCI(t, "read-only remount not permitted here: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, ".probe"), nil, 0o644); err == nil {
		testutil.SkipUnlessCI(t, "the bind mount is not read-only (EROFS not enforced here)")
	}
}

func TestFaultReadOnlyLibrary(t *testing.T) {
	e := setup(t)
	e.file("Saga (2012)/Saga 001.cbz", cbz(t, ci("Series", "Saga"), pages(3)...), t0)
	e.file("Saga (2012)/Saga 002.cbz", cbz(t, "", pages(2)...), t0)
	e.file("loose.jpg", []byte("\xff\xd8\xff\xe0 not really"), t0)
	before := e.checksumTree()
	bindReadOnly(t, e.root)
	c, err := e.scanWithin(30 * time.Second)
	if err != nil {
		t.Fatalf("scan of a read-only library: %v", err)
	}
	if c["added"] != 3 || c["files_seen"] != 3 {
		t.Fatalf("counts %v", c)
	}
	if got := e.one(`SELECT count(*) FROM library_files WHERE total_pages IS NOT NULL OR analysis_error_code IS NOT NULL`); got != "3" {
		t.Fatalf("%s of 3 files analysed", got)
	}
	if after := e.checksumTree(); after != before {
		t.Fatalf("library changed:\n%s\n%s", before, after)
	}
}

func TestFaultSpecialEntries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("A/good.cbz", cbz(t, "", pages(2)...), t0)
	if err := syscall.Mkfifo(filepath.Join(e.root, "A", "fifo.cbz"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(e.root, "A", "folder.cbz"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.file("A/folder.cbz/inner.cbz", cbz(t, "", pages(1)...), t0)
	c, err := e.scanWithin(30 * time.Second)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	t.Logf("counts %v; rows %v; errors %v", c, e.rows(`SELECT relative_path, COALESCE(analysis_error_code,'') FROM library_files ORDER BY 1`),
		e.rows(`SELECT relative_path, error_code FROM scan_errors ORDER BY 1`))
	// The FIFO is never indexed as a comic (opening it would block), the
	// folder named like an archive is walked as a folder.
	if got := e.rows(`SELECT relative_path FROM library_files ORDER BY 1`); strings.Join(got, ",") != "A/folder.cbz/inner.cbz,A/good.cbz" {
		t.Fatalf("indexed %v", got)
	}
	if got := e.one(`SELECT count(*) FROM library_files WHERE analysis_error_code IS NULL AND total_pages > 0`); got != "2" {
		t.Fatalf("%s good files analysed", got)
	}
	// ... but it is reported, so the user sees why it is not there.
	if got := e.rows(`SELECT relative_path || '|' || error_code FROM scan_errors`); strings.Join(got, ",") != "A/fifo.cbz|io_error" {
		t.Fatalf("scan errors %v", got)
	}
}

func TestFaultSymlinkLoops(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.file("S/one.cbz", cbz(t, "", pages(1)...), t0)
	for link, target := range map[string]string{
		"S/up": "..", "S/self": "self", "S/a": "b", "S/b": "a", "S/deep": "../S/deep", "S/dangling.cbz": "nowhere.cbz",
	} {
		if err := os.Symlink(target, filepath.Join(e.root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	c, err := e.scanWithin(30 * time.Second)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if got := e.rows(`SELECT relative_path FROM library_files`); strings.Join(got, ",") != "S/one.cbz" {
		t.Fatalf("indexed %v (counts %v)", got, c)
	}
	if c2, err := e.scanWithin(30 * time.Second); err != nil || c2["added"]+c2["changed"]+c2["missing"] != 0 {
		t.Fatalf("rescan: %v %v", c2, err)
	}
}

// TestFaultUnicodeNames: NFC and NFD spellings are different files on
// Linux and stay two rows; names with a newline, a tab or bytes that are
// not UTF-8 are indexed (or reported) without breaking the scan, and a
// rescan finds every one unchanged.
func TestFaultUnicodeNames(t *testing.T) {
	t.Parallel()
	e := setup(t)
	nfc, nfd := norm.NFC.String("Café"), norm.NFD.String("Café")
	if nfc == nfd {
		t.Fatal("normal forms coincide")
	}
	names := []string{nfc + ".cbz", nfd + ".cbz", "two\nlines.cbz", "tab\there.cbz", "Ångström/" + norm.NFD.String("Ö") + ".cbz",
		"\xff\xfe latin1.cbz", "日本語/漫画 1.cbz", " leading space.cbz", "trailing space .cbz"}
	for _, n := range names {
		e.file(n, cbz(t, "", pages(1)...), t0)
	}
	c, err := e.scanWithin(30 * time.Second)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	rows := e.rows(`SELECT relative_path FROM library_files ORDER BY 1`)
	errs := e.rows(`SELECT relative_path || ' ' || error_code FROM scan_errors`)
	t.Logf("rows %q; scan errors %q", rows, errs)
	if len(rows)+len(errs) < len(names) || len(rows) > len(names) {
		t.Fatalf("%d names → %d rows %q, errors %q", len(names), len(rows), rows, errs)
	}
	indexed := map[string]bool{}
	for _, r := range rows {
		indexed[r] = true
	}
	for _, n := range []string{nfc + ".cbz", nfd + ".cbz", "two\nlines.cbz", "tab\there.cbz"} {
		if !indexed[n] {
			t.Errorf("%q not indexed under its exact name (rows %q, errors %q)", n, rows, errs)
		}
	}
	// A name that is not UTF-8 is a scan error on both engines (PostgreSQL
	// refuses such text, and JSON could not show it), never a failed scan.
	if indexed["\xff\xfe latin1.cbz"] || !slices.Contains(errs, "\ufffd latin1.cbz io_error") {
		t.Errorf("the latin1 name: rows %q, errors %q; want one io_error under its name with U+FFFD", rows, errs)
	}
	c2, err := e.scanWithin(30 * time.Second)
	if err != nil || c2["unchanged"] != int64(len(rows)) || c2["added"]+c2["changed"]+c2["missing"] != 0 {
		t.Fatalf("rescan of %d rows: %v %v (first %v)", len(rows), c2, err, c)
	}
}

// TestFaultHugeFolder: one folder with 10,000 entries (9,000 of them not
// comics) is walked completely, once.
func TestFaultHugeFolder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := filepath.Join(e.root, "Huge")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	book := cbz(t, "", pages(1)...)
	made := time.Now()
	defer func() { t.Logf("setup+test %v", time.Since(made)) }()
	for i := range 10000 {
		name, data := fmt.Sprintf("note %05d.txt", i), []byte("x")
		if i%10 == 0 {
			name, data = fmt.Sprintf("Huge %05d.cbz", i), book
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	t.Logf("10,000 entries written in %v", start.Sub(made).Round(time.Millisecond))
	c, err := e.scanWithin(2 * time.Minute)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	t.Logf("10,000-entry folder scanned in %v: %v", time.Since(start).Round(time.Millisecond), c)
	if c["added"] != 1000 || e.one(`SELECT count(DISTINCT relative_path) FROM library_files`) != "1000" {
		t.Fatalf("counts %v", c)
	}
	if got := e.one(`SELECT count(*) FROM library_files WHERE total_pages = 1`); got != "1000" {
		t.Fatalf("%s of 1000 analysed", got)
	}
}

// TestFaultChurnDuringScan deletes, truncates, rewrites and re-adds files
// while scans run; once the tree settles, one more scan must give exactly
// the rows a fresh database gives for the same tree.
func TestFaultChurnDuringScan(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 120
	good := cbz(t, ci("Series", "Churn"), pages(4)...)
	for i := range n {
		e.file(fmt.Sprintf("C/book %03d.cbz", i), good, t0)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			p := filepath.Join(e.root, "C", fmt.Sprintf("book %03d.cbz", (i*37)%n))
			switch i % 4 {
			case 0:
				_ = os.Remove(p)
			case 1:
				_ = os.WriteFile(p, good[:len(good)/2], 0o644) // truncated mid-way
			case 2:
				_ = os.WriteFile(p, good, 0o644)
			case 3:
				if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
					_ = f.Truncate(10)
					f.Close()
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for range 3 {
		if _, err := e.scanWithin(time.Minute); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("scan during churn: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	// Settle: mtimes must differ from anything seen mid-churn so that the
	// final scan re-reads every file that changed.
	settle := time.Now().Add(time.Hour)
	_ = filepath.Walk(filepath.Join(e.root, "C"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			_ = os.Chtimes(p, settle, settle)
		}
		return nil
	})
	if _, err := e.scanWithin(time.Minute); err != nil {
		t.Fatalf("settled scan: %v", err)
	}
	fresh := setupOn(t, e.root)
	if _, err := fresh.scanWithin(time.Minute); err != nil {
		t.Fatalf("fresh scan: %v", err)
	}
	got, want := e.liveDump(), fresh.liveDump()
	if got != want {
		t.Fatalf("after churn:\n%s\nfresh database:\n%s", got, want)
	}
	t.Logf("%d live rows agree with a fresh scan; %s rows missing", strings.Count(want, "\n"),
		e.one(`SELECT count(*) FROM library_files WHERE is_missing = 1`))
}

// setupOn is setup over an existing library folder (a second database
// indexing the same tree).
func setupOn(t *testing.T, root string) *env {
	t.Helper()
	path := storetest.MustMigrate(t)
	clock := &safeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := &env{t: t, dbPath: path, clock: clock, root: root}
	e.control = storetest.MustOpen(t, path, store.RoleControl, clock.Now)
	e.worker = storetest.MustOpen(t, path, store.RoleWorker, clock.Now)
	lib, err := e.control.CreateLibrary(context.Background(), store.NewLibrary{Name: "comics", Path: root})
	if err != nil {
		t.Fatal(err)
	}
	e.lib = lib.ID
	e.exec = New(e.worker, Config{BatchSize: 7})
	return e
}

// liveDump is the present files' rows and metadata, without ids and times.
func (e *env) liveDump() string {
	var b strings.Builder
	for _, r := range e.rows(`SELECT f.relative_path, f.size_bytes, f.mtime_ns, f.format, f.total_pages,
			f.series_name_raw, s.name, f.needs_analysis, f.analysis_error_code, m.source, m.series
		FROM library_files f LEFT JOIN series s ON s.id = f.series_id LEFT JOIN file_metadata m ON m.file_id = f.id
		WHERE f.is_missing = 0 ORDER BY f.relative_path`) {
		b.WriteString(r + "\n")
	}
	return b.String()
}

// checksumTree renders every entry under the library with its size and
// mtime and content length, for before/after comparisons.
func (e *env) checksumTree() string {
	var b strings.Builder
	_ = filepath.Walk(e.root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %v %d %d %x\n", p, info.Mode(), info.Size(), info.ModTime().UnixNano(), len(data))
		return nil
	})
	return b.String()
}
