package scanning_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

// dataPlane is a database with one library, opened by two workerd
// processes (two stores: two writer connections competing for the lock),
// and a scan job a has claimed: fence is its token, which both carry.
type dataPlane struct {
	a, b  *store.Store
	lib   int64
	fence model.Fence
}

func setupDataPlane(t *testing.T) *dataPlane {
	t.Helper()
	control, a, path := storetest.MustOpenDB(t)
	b := storetest.MustOpen(t, path, store.RoleWorker, nil)
	lib := testfactory.Library(t, control, &testfactory.LibraryOpts{CreatedAt: control.Now()})
	return &dataPlane{a: a, b: b, lib: lib, fence: mustClaim(t, control, a, lib).Fence()}
}

// mustClaim inserts a pending scan job of library lib and claims it as
// worker with an hour's lease.
func mustClaim(t *testing.T, control, worker *store.Store, lib int64) model.Job {
	t.Helper()
	ctx := context.Background()
	now := protocol.FormatTime(control.Now())
	if _, err := storetest.Exec(ctx, control, `INSERT INTO jobs (kind, status, library_id, created_at, updated_at)
		VALUES ('scan', 'pending', ?, ?, ?)`, lib, now, now); err != nil {
		t.Fatal(err)
	}
	job, err := leases.New(worker).ClaimJob(ctx, "worker-a", time.Hour)
	if err != nil || job == nil {
		t.Fatalf("claim: %v, %v", job, err)
	}
	return *job
}

// TestEnsureSeriesConcurrent has two scanners create the same series at the
// same time in different orders: the unique identity index lets exactly one
// create each, and both get the same ids.
func TestEnsureSeriesConcurrent(t *testing.T) {
	d := setupDataPlane(t)
	ctx := context.Background()
	var in []scanning.NewSeries
	for i := range 60 {
		in = append(in, scanning.NewSeries{Name: fmt.Sprintf("Series %d", i), NameKey: fmt.Sprintf("series %d", i),
			Publisher: "P", PublisherKey: "p"})
	}
	shuffled := append([]scanning.NewSeries(nil), in...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var wg sync.WaitGroup
	ids := make([]map[string]int64, 2)
	created := make([]int64, 2)
	errs := make([]error, 2)
	for w, st := range []*store.Store{d.a, d.b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[w] = map[string]int64{}
			list := in
			if w == 1 {
				list = shuffled
			}
			for start := 0; start < len(list); start += 7 { // many small transactions interleave
				chunk := list[start:min(start+7, len(list))]
				got, n, err := scanning.New(st).EnsureSeries(ctx, d.fence, d.lib, chunk)
				if err != nil {
					errs[w] = err
					return
				}
				created[w] += n
				for i, s := range chunk {
					ids[w][s.NameKey] = got[i]
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if created[0]+created[1] != 60 {
		t.Fatalf("created %v, want 60 in all", created)
	}
	for k, id := range ids[0] {
		if ids[1][k] != id {
			t.Fatalf("%s: ids %d and %d", k, id, ids[1][k])
		}
	}
	if n, _ := storetest.QueryInt(ctx, d.a, `SELECT count(*) FROM series`); n != 60 {
		t.Fatalf("%d series", n)
	}
	// Again: nothing created, same ids.
	got, n, err := scanning.New(d.a).EnsureSeries(ctx, d.fence, d.lib, in[:3])
	if err != nil || n != 0 || got[0] != ids[0][in[0].NameKey] {
		t.Fatalf("second ensure: %v %d %v", got, n, err)
	}
}

// TestDiscoveryReplay applies the same discovery batch twice, as a scan
// restarted after a kill would: nothing is inserted or marked twice.
func TestDiscoveryReplay(t *testing.T) {
	d := setupDataPlane(t)
	ctx := context.Background()
	sess, err := scanning.New(d.a).StartScanSession(ctx, d.fence, d.lib)
	if err != nil {
		t.Fatal(err)
	}
	b := &scanning.DiscoveryBatch{SessionID: sess.ID, LibraryID: d.lib, MissingSince: sess.StartedAt,
		Insert: []scanning.FileStat{{RelativePath: "a.cbz", SizeBytes: 1, MtimeNS: 2}, {RelativePath: "b.cbz", SizeBytes: 3, MtimeNS: 4}},
		Errors: []model.ScanError{{RelativePath: "x", ErrorCode: protocol.ErrIOError, Message: "m"}},
		Counts: model.ScanCounts{FilesSeen: 2, Added: 2, ErrorCount: 1}}
	for range 2 {
		if err := scanning.New(d.a).ApplyDiscovery(ctx, d.fence, b); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := storetest.QueryInt(ctx, d.a, `SELECT count(*) FROM library_files`); n != 2 {
		t.Fatalf("%d rows", n)
	}
	sigs, err := scanning.New(d.a).FileSigsAfter(ctx, d.lib, "", 10)
	if err != nil || len(sigs) != 2 || sigs[0].RelativePath != "a.cbz" {
		t.Fatalf("sigs %v %v", sigs, err)
	}
	miss := &scanning.DiscoveryBatch{SessionID: sess.ID, LibraryID: d.lib, MissingSince: protocol.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Missing: []int64{sigs[0].ID}, Counts: b.Counts}
	for range 2 {
		if err := scanning.New(d.b).ApplyDiscovery(ctx, d.fence, miss); err != nil {
			t.Fatal(err)
		}
		miss.MissingSince = protocol.NewTime(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) // a replay must not move missing_since
	}
	if n, _ := storetest.QueryInt(ctx, d.a, `SELECT count(*) FROM library_files WHERE is_missing = 1
		AND missing_since = '2026-01-01 00:00:00.000'`); n != 1 {
		t.Fatalf("missing rows %d", n)
	}
	rec, err := catalog.New(d.a).GetScan(ctx, sess.ID)
	if err != nil || rec.FilesSeen != 2 || rec.Status != "running" {
		t.Fatalf("session %+v %v", rec, err)
	}
}

// TestApplyMoveRace: a move whose old row is no longer missing changes
// nothing.
func TestApplyMoveRace(t *testing.T) {
	d := setupDataPlane(t)
	ctx := context.Background()
	sess, _ := scanning.New(d.a).StartScanSession(ctx, d.fence, d.lib)
	b := &scanning.DiscoveryBatch{SessionID: sess.ID, LibraryID: d.lib,
		Insert: []scanning.FileStat{{RelativePath: "old.cbz", SizeBytes: 5, MtimeNS: 1}, {RelativePath: "new.cbz", SizeBytes: 5, MtimeNS: 2}}}
	if err := scanning.New(d.a).ApplyDiscovery(ctx, d.fence, b); err != nil {
		t.Fatal(err)
	}
	sigs, _ := scanning.New(d.a).FileSigsAfter(ctx, d.lib, "", 10) // new.cbz, old.cbz
	h := scanning.FileHash{Algorithm: "blake3", Sum: make([]byte, 32), SizeBytes: 5, MtimeNS: 2}
	ok, err := scanning.New(d.a).ApplyMove(ctx, d.fence, scanning.Move{SessionID: sess.ID, NewID: sigs[0].ID, OldID: sigs[1].ID,
		Stat: scanning.FileStat{RelativePath: "new.cbz", SizeBytes: 5, MtimeNS: 2}, Hash: h})
	if err != nil || ok {
		t.Fatalf("move onto a present row: ok=%v err=%v", ok, err)
	}
	if n, _ := storetest.QueryInt(ctx, d.a, `SELECT count(*) FROM library_files`); n != 2 {
		t.Fatalf("rows %d: the rolled back move deleted one", n)
	}
}

// TestAbandonedSessionKeepsItsEnd: a run that outlived its session (a newer
// scan of the library closed it as abandoned) can neither finish it nor
// write its figures.
func TestAbandonedSessionKeepsItsEnd(t *testing.T) {
	d := setupDataPlane(t)
	ctx := context.Background()
	old, err := scanning.New(d.a).StartScanSession(ctx, d.fence, d.lib)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scanning.New(d.b).StartScanSession(ctx, d.fence, d.lib); err != nil {
		t.Fatal(err)
	}
	if err := scanning.New(d.a).UpdateScanCounts(ctx, d.fence, old.ID, model.ScanCounts{FilesSeen: 9}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("update counts of a closed session: %v", err)
	}
	if err := scanning.New(d.a).FinishScanSession(ctx, d.fence, old.ID, protocol.ScanSucceeded, model.ScanCounts{FilesSeen: 9}, "", ""); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("finish of a closed session: %v", err)
	}
	got, err := catalog.New(d.a).GetScan(ctx, old.ID)
	if err != nil || got.Status != "failed" || model.Deref(got.ErrorMessage) != scanning.AbandonedScanMessage || got.FilesSeen != 0 {
		t.Fatalf("session %+v %v, want it failed as abandoned with no figures", got, err)
	}
}

// TestLinkFiles links a batch spread over two series, in interleaved
// order: every unlinked file joins its series, a file linked meanwhile
// keeps the series it has, and the book search index follows.
func TestLinkFiles(t *testing.T) {
	d := setupDataPlane(t)
	ctx := context.Background()
	ids, _, err := scanning.New(d.a).EnsureSeries(ctx, d.fence, d.lib, []scanning.NewSeries{
		{Name: "Saga", NameKey: "saga"}, {Name: "Monstress", NameKey: "monstress"}})
	if err != nil {
		t.Fatal(err)
	}
	saga, monstress := ids[0], ids[1]
	var files []int64
	for i := range 6 {
		files = append(files, testfactory.File(t, d.a, &testfactory.FileOpts{LibraryID: d.lib,
			RelativePath: fmt.Sprintf("mixed/%d.cbz", i)}))
	}
	// The last file was linked by another scan first.
	if _, err := storetest.Exec(ctx, d.a, `UPDATE library_files SET series_id = ? WHERE id = ?`, saga, files[5]); err != nil {
		t.Fatal(err)
	}
	var links []scanning.FileLink
	for i, f := range files {
		links = append(links, scanning.FileLink{FileID: f, SeriesID: []int64{saga, monstress}[i%2]})
	}
	if err := scanning.New(d.a).LinkFiles(ctx, d.fence, links); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		want := []int64{saga, monstress}[i%2]
		if i == 5 {
			want = saga
		}
		if got, err := storetest.QueryInt(ctx, d.a, `SELECT series_id FROM library_files WHERE id = ?`, f); err != nil || got != want {
			t.Errorf("file %d: series %d (%v), want %d", i, got, err, want)
		}
	}
	found := `SELECT count(*) FROM book_search WHERE series MATCH 'monstress'`
	if storetest.Postgres() {
		found = `SELECT count(*) FROM book_search WHERE doc @@ to_tsquery('simple', 'monstress')`
	}
	if n, err := storetest.QueryInt(ctx, d.a, found); err != nil || n != 2 {
		t.Errorf("%d books found by their series (%v), want 2", n, err)
	}
}

// TestLinkFilesPlan: LinkFiles finds its files by primary key. With the
// unlinked files in the series indexes (before migration 30), SQLite's
// planner read the whole NULL range of ix_library_files_series_sort for
// every statement, and a first scan's series phase grew with the square
// of the library.
func TestLinkFilesPlan(t *testing.T) {
	storetest.SkipOnPostgres(t, "reads SQLite's EXPLAIN QUERY PLAN")
	d := setupDataPlane(t)
	ctx := context.Background()
	var files []int64
	for i := range 100 {
		files = append(files, testfactory.File(t, d.a, &testfactory.FileOpts{LibraryID: d.lib,
			RelativePath: fmt.Sprintf("unlinked/%03d.cbz", i)}))
	}
	for _, ids := range [][]int64{files[:1], files} {
		plan, err := scanning.New(d.a).ExplainLinkFiles(ctx, 7, ids)
		text := fmt.Sprint(plan)
		if err != nil || !strings.Contains(text, "INTEGER PRIMARY KEY") || strings.Contains(text, "ix_library_files_series") {
			t.Errorf("%d files: plan %v %v; want the primary key", len(ids), plan, err)
		}
	}
}
