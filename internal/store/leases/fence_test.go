package leases_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

// TestClaimRaisesLeaseEpoch: every claim of a jobs row is a new token, even
// the same worker's claim of the same row after a recovery.
func TestClaimRaisesLeaseEpoch(t *testing.T) {
	f := setupLease(t)
	id := f.addJob(t, "scan", "normal", 0)
	for want := int64(1); want <= 2; want++ {
		job, err := f.worker.ClaimJob(f.ctx, "w1", 30*time.Second)
		if err != nil || job == nil || job.ID != id || job.LeaseEpoch != want {
			t.Fatalf("claim %d: %+v, %v", want, job, err)
		}
		if fence := job.Fence(); fence.ID != id || fence.Table != model.LeaseJobs || fence.WorkerID != "w1" || fence.Epoch != want {
			t.Fatalf("fence %+v", fence)
		}
		f.clock.Advance(time.Minute)
		if _, err := f.control.RecoverStale(f.ctx); err != nil {
			t.Fatal(err)
		}
		f.exec(t, `UPDATE jobs SET status = 'pending' WHERE id = ?`, id) // controld's requeue
	}
}

// fencedFixture is a library with a file of every kind the data writes
// touch, and the ids of those rows.
type fencedFixture struct {
	*fixture
	due, analysed, gone, empty int64
}

func setupFenced(t *testing.T) *fencedFixture {
	t.Helper()
	f := &fencedFixture{fixture: setupLease(t)}
	ts := f.now()
	testfactory.Library(t, f.controlDB, &testfactory.LibraryOpts{ID: 1})
	file := func(rel, extra, values string) int64 {
		return f.insert(t, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, created_at, updated_at`+extra+`)
			VALUES (1, ?, 10, 1, ?, ?`+values+`) RETURNING id`, rel, ts, ts)
	}
	f.due = file("due.cbz", "", "")
	f.analysed = file("analysed.cbz", ", needs_analysis, total_pages, analyzed_at", ", 0, 3, '2026-01-01 00:00:00.000'")
	f.gone = file("gone.cbz", ", is_missing, missing_since", ", 1, '2025-01-01 00:00:00.000'")
	f.empty = f.insert(t, `INSERT INTO series (library_id, name, name_key, publisher, publisher_key, sort_key, file_count, created_at, updated_at)
		VALUES (1, 'Empty', 'empty', '', '', 'empty', 5, ?, ?) RETURNING id`, ts, ts)
	return f
}

// snapshot is every figure a scan's or hash job's writes could change.
func (f *fencedFixture) snapshot(t *testing.T) []int64 {
	t.Helper()
	var out []int64
	for _, q := range []string{
		`SELECT count(*) FROM library_files`,
		`SELECT count(*) FROM library_files WHERE is_missing = 1`,
		`SELECT count(*) FROM library_files WHERE needs_analysis = 1`,
		`SELECT count(*) FROM library_files WHERE needs_hash = 1`,
		`SELECT count(*) FROM library_files WHERE content_hash IS NOT NULL`,
		`SELECT count(*) FROM library_files WHERE partial_hash IS NOT NULL`,
		`SELECT count(*) FROM library_files WHERE hash_error_count > 0`,
		`SELECT count(*) FROM library_files WHERE needs_cover = 1`,
		`SELECT count(*) FROM library_files WHERE series_id IS NOT NULL`,
		`SELECT count(*) FROM file_metadata`,
		`SELECT count(*) FROM series`,
		`SELECT coalesce(sum(file_count), 0) FROM series`,
		`SELECT count(*) FROM scan_sessions`,
		`SELECT count(*) FROM scan_sessions WHERE status = 'running'`,
		`SELECT coalesce(sum(files_seen), 0) FROM scan_sessions`,
		`SELECT count(*) FROM scan_errors`,
	} {
		n, err := storetest.QueryInt(f.ctx, f.controlDB, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, n)
	}
	return out
}

// fencedWrite is one data-plane write of a scan or hash job.
type fencedWrite struct {
	name string
	do   func(ctx context.Context, w *store.Store, fe model.Fence) error
}

// fencedWrites are every data write of scan and hash work, each one that
// changes the fixture when it is let through; session is a running scan
// session of the fixture.
func (f *fencedFixture) fencedWrites(session int64) []fencedWrite {
	sum := make([]byte, 32)
	sum[0] = 7
	counts := model.ScanCounts{FilesSeen: 3}
	errs := []model.ScanError{{RelativePath: "x/", ErrorCode: protocol.ErrIOError, Message: "unreadable"}}
	hash := scanning.FileHash{Algorithm: "blake3", Sum: sum, SizeBytes: 10, MtimeNS: 1}
	return []fencedWrite{
		{"ApplyDiscovery", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).ApplyDiscovery(ctx, fe, &scanning.DiscoveryBatch{SessionID: session, LibraryID: 1,
				MissingSince: protocol.NewTime(f.clock.Now()), Insert: []scanning.FileStat{{RelativePath: "zombie.cbz", SizeBytes: 1, MtimeNS: 1}},
				Missing: []int64{f.analysed}, Errors: errs, Counts: counts})
		}},
		{"ApplyAnalysis", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).ApplyAnalysis(ctx, fe, &scanning.AnalysisBatch{SessionID: session, Counts: counts, Results: []scanning.Analysis{{
				ID: f.due, Format: "zip", TotalPages: new(int64(2)), SeriesNameRaw: "Zombie",
				Metadata: model.FileMetadata{Source: "filename"}, SortKey: "z"}}})
		}},
		{"RecordHash", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).RecordHash(ctx, fe, f.due, hash)
		}},
		{"RecordHashes", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, err := hashes.New(w).RecordHashes(ctx, fe, []hashes.HashResult{{ID: f.due, Algorithm: protocol.HashBLAKE3, Sum: sum, SizeBytes: 10, MtimeNS: 1}},
				[]hashes.HashFailure{{ID: f.analysed, Message: "io_error: x", Backoff: func(int64) time.Duration { return time.Minute }}})
			return err
		}},
		{"RecordPartialHashes", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, err := hashes.New(w).RecordPartialHashes(ctx, fe, []hashes.PartialResult{{ID: f.due, Sum: sum, SizeBytes: 10, MtimeNS: 1}})
			return err
		}},
		{"ApplyMove", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, err := scanning.New(w).ApplyMove(ctx, fe, scanning.Move{SessionID: session, NewID: f.due, OldID: f.gone, Counts: counts, Hash: hash,
				Stat: scanning.FileStat{RelativePath: "due.cbz", SizeBytes: 10, MtimeNS: 1}})
			return err
		}},
		{"PurgeMissing", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, err := scanning.New(w).PurgeMissing(ctx, fe, 1, f.clock.Now(), 10)
			return err
		}},
		{"EnsureSeries", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, _, err := scanning.New(w).EnsureSeries(ctx, fe, 1, []scanning.NewSeries{{Name: "Zombie", NameKey: "zombie"}})
			return err
		}},
		{"LinkFiles", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).LinkFiles(ctx, fe, []scanning.FileLink{{FileID: f.analysed, SeriesID: f.empty}})
		}},
		{"RefreshSeriesCounts", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).RefreshSeriesCounts(ctx, fe, 1)
		}},
		{"RemoveEmptySeries", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, err := scanning.New(w).RemoveEmptySeries(ctx, fe, 1)
			return err
		}},
		{"MarkCoversMissing", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, err := scanning.New(w).MarkCoversMissing(ctx, fe, 1, 10)
			return err
		}},
		{"MarkNeedsCover", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).MarkNeedsCover(ctx, fe, []int64{f.due})
		}},
		{"AddScanErrors", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).AddScanErrors(ctx, fe, session, errs)
		}},
		{"UpdateScanCounts", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).UpdateScanCounts(ctx, fe, session, counts)
		}},
		{"FinishScanSession", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			return scanning.New(w).FinishScanSession(ctx, fe, session, protocol.ScanSucceeded, counts, "", "")
		}},
		// Last: it closes the session the others write.
		{"StartScanSession", func(ctx context.Context, w *store.Store, fe model.Fence) error {
			_, err := scanning.New(w).StartScanSession(ctx, fe, 1)
			return err
		}},
	}
}

// TestZombieWritesChangeNothing is the reviewer's reproduction (issue 35):
// worker A claims a scan or hash job and starts its work; its lease
// expires and is recovered; every data write A still makes under that
// claim is refused with ErrLeaseLost and changes nothing. So is a write
// under an expired lease not yet recovered, and one under A's earlier
// claim once A has claimed the row again. A live claim's writes go through.
func TestZombieWritesChangeNothing(t *testing.T) {
	for _, kind := range []string{"scan", "hash"} {
		t.Run(kind, func(t *testing.T) {
			f := setupFenced(t)
			id := f.insert(t, `INSERT INTO jobs (kind, library_id, created_at, updated_at) VALUES (?, 1, ?, ?) RETURNING id`, kind, f.now(), f.now())
			job, err := f.worker.ClaimJob(f.ctx, "worker-a", 30*time.Second)
			if err != nil || job == nil || job.ID != id {
				t.Fatalf("claim: %+v %v", job, err)
			}
			zombie := job.Fence()
			session, err := scanning.New(f.workerDB).StartScanSession(f.ctx, zombie, 1)
			if err != nil {
				t.Fatal(err)
			}
			refused := func(t *testing.T, when string) {
				t.Helper()
				for _, w := range f.fencedWrites(session.ID) {
					before := f.snapshot(t)
					if err := w.do(f.ctx, f.workerDB, zombie); !errors.Is(err, store.ErrLeaseLost) || !errors.Is(err, store.ErrNotOwner) {
						t.Errorf("%s, %s: %v, want ErrLeaseLost", when, w.name, err)
					}
					if after := f.snapshot(t); !slices.Equal(before, after) {
						t.Errorf("%s, %s changed the data: %v -> %v", when, w.name, before, after)
					}
				}
			}
			f.clock.Advance(31 * time.Second)
			refused(t, "lease expired")
			if c, err := f.control.RecoverStale(f.ctx); err != nil || c.Jobs != 1 {
				t.Fatalf("recover: %+v %v", c, err)
			}
			refused(t, "lease recovered")

			// A claims the row again: its old claim stays dead, the new one writes.
			f.exec(t, `UPDATE jobs SET status = 'pending' WHERE id = ?`, id)
			again, err := f.worker.ClaimJob(f.ctx, "worker-a", 30*time.Second)
			if err != nil || again == nil || again.ID != id {
				t.Fatalf("claim again: %+v %v", again, err)
			}
			refused(t, "claimed again")
			live, err := scanning.New(f.workerDB).StartScanSession(f.ctx, again.Fence(), 1)
			if err != nil {
				t.Fatal(err)
			}
			before := f.snapshot(t)
			for _, w := range f.fencedWrites(live.ID) {
				if err := w.do(f.ctx, f.workerDB, again.Fence()); err != nil {
					t.Errorf("live claim, %s: %v", w.name, err)
				}
			}
			if after := f.snapshot(t); slices.Equal(before, after) {
				t.Errorf("the live claim's writes changed nothing: %v", fmt.Sprint(after))
			}
		})
	}
}

// TestRecoveryClosesScanSession: the recovery of a stale scan job closes
// its running session in the same transaction (failed, lease_expired),
// whether controld's sweep or a worker's claim recovers it; another job's
// running session is left alone.
func TestRecoveryClosesScanSession(t *testing.T) {
	for _, by := range []string{"sweep", "claim"} {
		t.Run(by, func(t *testing.T) {
			f := setupFenced(t)
			lost := f.insert(t, `INSERT INTO jobs (kind, library_id, created_at, updated_at) VALUES ('scan', 1, ?, ?) RETURNING id`, f.now(), f.now())
			job, err := f.worker.ClaimJob(f.ctx, "worker-a", 30*time.Second)
			if err != nil || job == nil || job.ID != lost {
				t.Fatalf("claim: %+v %v", job, err)
			}
			session, err := scanning.New(f.workerDB).StartScanSession(f.ctx, job.Fence(), 1)
			if err != nil {
				t.Fatal(err)
			}
			// A live delete job's session (no scan has one, but recovery
			// must close only the sessions of the jobs it recovers).
			other := f.insert(t, `INSERT INTO jobs (kind, status, worker_id, lease_expires_at, created_at, updated_at)
				VALUES ('delete', 'running', 'worker-b', '2099-01-01 00:00:00.000', ?, ?) RETURNING id`, f.now(), f.now())
			live := f.insert(t, `INSERT INTO scan_sessions (job_id, library_id, status, started_at) VALUES (?, 1, 'running', ?) RETURNING id`, other, f.now())
			f.clock.Advance(31 * time.Second)
			switch by {
			case "sweep":
				if c, err := f.control.RecoverStale(f.ctx); err != nil || c.Jobs != 1 {
					t.Fatalf("recover: %+v %v", c, err)
				}
			case "claim":
				if _, err := f.worker.ClaimJob(f.ctx, "worker-c", 30*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			got, err := catalog.New(f.controlDB).GetScan(f.ctx, session.ID)
			if err != nil || got.Status != protocol.ScanFailed || model.Deref(got.ErrorCode) != protocol.ErrLeaseExpired ||
				model.Deref(got.ErrorMessage) != leases.RecoveredScanMessage || got.FinishedAt == nil {
				t.Fatalf("lost job's session %+v %v, want it failed with lease_expired", got, err)
			}
			if got, err := catalog.New(f.controlDB).GetScan(f.ctx, live); err != nil || got.Status != protocol.ScanRunning {
				t.Fatalf("live job's session %+v %v, want it running", got, err)
			}
		})
	}
}
