package checks

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // the harness reads the database as a third party

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// OpenRO opens the database read-only, as any monitoring tool would: the
// harness never writes through this handle. Either engine: the path may be
// a postgres:// URL.
func OpenRO(path string) (*sql.DB, error) {
	db, err := store.OpenReadOnly(path)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	return db, nil
}

// OpenOperator opens a read-write handle for the one write the harness
// makes as an operator: pulling the retry time of retryable jobs forward
// (see fastForward).
func OpenOperator(path string) (*sql.DB, error) {
	db, err := store.OpenRaw(path)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// FastForward moves retry_after of retryable jobs to now, so that a job
// killed five times waits seconds instead of attempt⁴ seconds (625 s at
// the fifth attempt). Everything else about the retry (attempt+1, the
// single-active slot, max attempts) stays controld's decision.
func FastForward(ctx context.Context, db *sql.DB) (int64, error) {
	now := protocol.FormatTime(time.Now())
	res, err := db.ExecContext(ctx, `UPDATE jobs SET retry_after = ? WHERE status = 'retryable' AND retry_after > ?`, now, now)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Backlog is what is still to do; the system is drained when every count
// is zero and the pipeline (scan → hash → covers) has run.
type Backlog struct {
	ActiveJobs, Queue, ActiveThumbs, NeedsCover, NeedsWork, ActiveCleanup, ActiveWAL, Unfollowed int64
	CompletedScans, CompletedHashes                                                              int64
}

func (b Backlog) Drained() bool {
	return b.ActiveJobs+b.Queue+b.ActiveThumbs+b.NeedsCover+b.NeedsWork+b.ActiveCleanup+b.ActiveWAL+b.Unfollowed == 0 &&
		b.CompletedScans > 0 && b.CompletedHashes > 0
}

func ReadBacklog(ctx context.Context, db *sql.DB) (Backlog, error) {
	var b Backlog
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM jobs WHERE status IN ('pending','running','retryable')),
		(SELECT count(*) FROM scan_requests),
		(SELECT count(*) FROM thumbnails WHERE status IN ('pending','running')),
		(SELECT count(*) FROM library_files WHERE needs_cover = 1 AND is_missing = 0),
		(SELECT count(*) FROM library_files WHERE is_missing = 0 AND (needs_analysis = 1 OR needs_hash = 1)),
		(SELECT count(*) FROM thumbnail_cleanup_jobs WHERE status IN ('pending','running')),
		(SELECT count(*) FROM wal_maintenance_jobs WHERE status IN ('pending','running','retryable')),
		(SELECT count(*) FROM jobs j WHERE ((kind = 'scan' AND status IN ('completed','failed','cancelled'))
				OR (kind = 'hash' AND status = 'completed' AND result LIKE '%"yielded":1%'))
			AND NOT EXISTS (SELECT 1 FROM job_followups f WHERE f.job_id = j.id)),
		(SELECT count(*) FROM jobs WHERE kind = 'scan' AND status = 'completed'),
		(SELECT count(*) FROM jobs WHERE kind = 'hash' AND status = 'completed')`).Scan(
		&b.ActiveJobs, &b.Queue, &b.ActiveThumbs, &b.NeedsCover, &b.NeedsWork, &b.ActiveCleanup, &b.ActiveWAL,
		&b.Unfollowed, &b.CompletedScans, &b.CompletedHashes)
	return b, err
}

// WaitDrained polls until the backlog is empty on two reads at least
// settle apart (controld admits covers and follows scans up on ticks).
func WaitDrained(ctx context.Context, db *sql.DB, settle, timeout time.Duration, tick func()) (Backlog, error) {
	deadline := time.Now().Add(timeout)
	var since time.Time
	for {
		if tick != nil {
			tick()
		}
		b, err := ReadBacklog(ctx, db)
		if err != nil {
			return b, err
		}
		switch {
		case !b.Drained():
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= settle:
			return b, nil
		}
		if time.Now().After(deadline) {
			return b, fmt.Errorf("not drained after %v: %+v", timeout, b)
		}
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// RowKey names one leased row.
type RowKey struct {
	Table string
	ID    int64
}

// Sampler reads the database read-only every interval while the chaos
// runs: the number of active scan/hash rows (at most one, ever), and the
// owner of every running row, from which it counts recoveries (a row seen
// running under one worker, later pending/retryable or running under
// another).
type Sampler struct {
	db *sql.DB

	mu         sync.Mutex
	samples    int
	errors     int
	maxActive  int64
	owner      map[RowKey]string
	recoveries map[string]int // table → observed hand-overs
	expired    map[int64]bool // job ids seen with error_code lease_expired
}

func NewSampler(db *sql.DB) *Sampler {
	return &Sampler{db: db, owner: map[RowKey]string{}, recoveries: map[string]int{}, expired: map[int64]bool{}}
}

func (s *Sampler) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sampler) sample(ctx context.Context) {
	var active int64
	running := map[RowKey]string{}
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs
		WHERE status IN ('pending','running') AND kind IN ('scan','hash')`).Scan(&active)
	if err == nil {
		err = s.Running(ctx, running)
	}
	var expired []int64
	if err == nil {
		expired, err = s.leaseExpired(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.errors++
		}
		return
	}
	s.samples++
	s.maxActive = max(s.maxActive, active)
	for _, id := range expired {
		s.expired[id] = true
	}
	for k, was := range s.owner {
		if now, ok := running[k]; !ok || now != was {
			// Finished rows leave too; those are not recoveries: a
			// finish keeps worker_id, which recovered rows lose.
			if s.recovered(ctx, k, was) {
				s.recoveries[k.Table]++
			}
			delete(s.owner, k)
		}
	}
	for k, w := range running {
		s.owner[k] = w
	}
}

func (s *Sampler) Running(ctx context.Context, out map[RowKey]string) error {
	rows, err := s.db.QueryContext(ctx, `SELECT 'jobs', id, worker_id FROM jobs WHERE status = 'running'
		UNION ALL SELECT 'thumbnails', id, worker_id FROM thumbnails WHERE status = 'running'
		UNION ALL SELECT 'cleanup', id, worker_id FROM thumbnail_cleanup_jobs WHERE status = 'running'
		UNION ALL SELECT 'wal', id, worker_id FROM wal_maintenance_jobs WHERE status = 'running'`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k RowKey
		var w sql.NullString
		if err := rows.Scan(&k.Table, &k.ID, &w); err != nil {
			return err
		}
		out[k] = w.String
	}
	return rows.Err()
}

// recovered tells whether row k, last seen running under was, has since
// been taken from was: it is running under someone else, or it is not
// running and no longer names was.
func (s *Sampler) recovered(ctx context.Context, k RowKey, was string) bool {
	table := map[string]string{"jobs": "jobs", "thumbnails": "thumbnails", "cleanup": "thumbnail_cleanup_jobs",
		"wal": "wal_maintenance_jobs"}[k.Table]
	var w sql.NullString
	var status string
	// table comes from the fixed map above, never from input.
	if err := s.db.QueryRowContext(ctx, `SELECT status, worker_id FROM `+table+` WHERE id = ?`, k.ID).Scan(&status, &w); err != nil {
		return false
	}
	return w.String != was
}

func (s *Sampler) leaseExpired(ctx context.Context) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM jobs WHERE error_code = 'lease_expired'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

func (s *Sampler) LeaseExpiredJobs() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.expired))
}

func (s *Sampler) Snapshot() (samples, errors int, maxActive int64, recoveries map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := map[string]int{}
	for k, v := range s.recoveries {
		rec[k] = v
	}
	return s.samples, s.errors, s.maxActive, rec
}
