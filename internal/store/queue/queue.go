package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// The scan queue (protocol: scan_requests). The single-active index lets at
// most one scan/hash job be pending or running; every other request waits
// here, one entry per (kind, library), high priority before normal, then
// first come first served. The queue lives in the database so that a
// controld restart loses nothing: the dispatcher simply promotes the head
// again when the slot is free.

// JobRequest asks for a scan or hash job.
type JobRequest struct {
	Kind protocol.JobKind
	// LibraryID is required for scan; a hash without library hashes every
	// library.
	LibraryID *int64
	Priority  protocol.Priority
	// Reason is free text for operators ("api", "schedule", "after scan 12").
	Reason string
	// Paths scopes a scan to folders of the library, in
	// protocol.NormalizeScanPaths form; nil is the whole library.
	Paths []string
}

// ScanRequest is a row of scan_requests: a request waiting for the slot.
type ScanRequest struct {
	ID        int64             `db:"id"`
	Kind      protocol.JobKind  `db:"kind"`
	LibraryID *int64            `db:"library_id"`
	Priority  protocol.Priority `db:"priority"`
	Reason    string            `db:"reason"`
	// Paths: the folders the scan is scoped to (JSON array), NULL for the
	// whole library.
	Paths     sql.NullString `db:"paths"`
	CreatedAt protocol.Time  `db:"created_at"`
	UpdatedAt protocol.Time  `db:"updated_at"`
}

// RequestOutcome tells what RequestJob did. Exactly one of Job and Queued is
// set. Created is true only when a new jobs row was inserted. Position is
// the 1-based place of Queued in run order (0 when Job is set).
type RequestOutcome struct {
	Job      *model.Job
	Queued   *ScanRequest
	Position int
	// Created: the job, or the queue entry, was inserted by this request.
	Created bool
}

const scanRequestCols = `id, kind, library_id, priority, reason, paths, created_at, updated_at`

// queueOrder is the run order: scans before hashes, whatever their
// priority (a hash never keeps a scan waiting, protocol §5: a hash job
// promoted ahead of a scan would only yield to it at once), then 'high'
// before 'normal' (the plain column order), then first come first served.
const queueOrder = `ORDER BY kind = 'hash', priority, created_at, id`

// RequestJob admits a scan/hash request in one write transaction:
//  1. a pending/running job of the same kind and library is returned as is;
//  2. else an existing queue entry is returned (a high request upgrades a
//     normal entry);
//  3. else, when the single-active slot is free and nobody is queued, a
//     pending job is inserted (when a third party took the slot meanwhile,
//     the INSERT does nothing: fall through);
//  4. else a queue entry is inserted.
func (s *Store) RequestJob(ctx context.Context, r JobRequest) (RequestOutcome, error) {
	if err := validateJobRequest(r); err != nil {
		return RequestOutcome{}, err
	}
	var out RequestOutcome
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		var err error
		out, err = requestJobTx(ctx, tx, r, s.db.NowText())
		return err
	})
	if err != nil {
		return RequestOutcome{}, fmt.Errorf("request %s job: %w", r.Kind, err)
	}
	return out, nil
}

// requestJobTx is RequestJob inside the caller's transaction. A scan
// request, whatever its outcome, stamps the library's
// last_scan_requested_at: the periodic schedule counts from the last scan
// anyone asked for.
func requestJobTx(ctx context.Context, tx *sqlx.Tx, r JobRequest, now string) (RequestOutcome, error) {
	var out RequestOutcome
	if r.LibraryID != nil {
		if err := libraryExists(ctx, tx, *r.LibraryID); err != nil {
			return out, err
		}
	}
	if r.Kind == protocol.JobKindScan {
		if _, err := tx.ExecContext(ctx, `UPDATE libraries SET last_scan_requested_at = ? WHERE id = ?`,
			now, r.LibraryID); err != nil {
			return out, err
		}
	}
	job, err := activeJobFor(ctx, tx, r.Kind, r.LibraryID)
	if err != nil {
		return out, err
	}
	if job, err = absorbIntoActive(ctx, tx, job, r, now); err != nil || job != nil {
		out.Job = job
		return out, err
	}
	if q, err := upgradeEntry(ctx, tx, r, now); err != nil || q != nil {
		if err == nil {
			out.Queued = q
			out.Position, err = queuePosition(ctx, tx, q)
		}
		return out, err
	}
	job, err = insertJobIfFree(ctx, tx, r, now)
	if err != nil || job != nil {
		out.Job, out.Created = job, job != nil
		return out, err
	}
	q, err := insertEntry(ctx, tx, r, now)
	if err != nil {
		return out, err
	}
	out.Queued, out.Created = q, true
	out.Position, err = queuePosition(ctx, tx, q)
	return out, err
}

func validateJobRequest(r JobRequest) error {
	switch r.Kind {
	case protocol.JobKindScan:
		if r.LibraryID == nil {
			return fmt.Errorf("%w: a scan needs a library", sqldb.ErrInvalidRequest)
		}
	case protocol.JobKindHash:
		if r.Paths != nil {
			return fmt.Errorf("%w: only a scan names folders", sqldb.ErrInvalidRequest)
		}
	default:
		return fmt.Errorf("%w: kind %q is not queued (want scan or hash)", sqldb.ErrInvalidRequest, r.Kind)
	}
	if _, err := protocol.ParsePriority(string(r.Priority)); err != nil {
		return fmt.Errorf("%w: %v", sqldb.ErrInvalidRequest, err)
	}
	return nil
}

func libraryExists(ctx context.Context, tx *sqlx.Tx, id int64) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM libraries WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("library %d: %w", id, sqldb.ErrNotFound)
	}
	return err
}

func activeJobFor(ctx context.Context, tx *sqlx.Tx, kind protocol.JobKind, lib *int64) (*model.Job, error) {
	var j model.Job
	err := tx.GetContext(ctx, &j, `SELECT * FROM jobs
		WHERE kind = ? AND library_id IS NOT DISTINCT FROM ? AND status IN ('pending','running')
		ORDER BY id LIMIT 1`, string(kind), lib)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// upgradeEntry returns the existing entry of the request's target, raising
// it to high when the request is high and widening its folders to the
// union of both scopes (a library-wide request absorbs folder requests). It
// keeps created_at: a merged entry runs in the order it was first asked for.
func upgradeEntry(ctx context.Context, tx *sqlx.Tx, r JobRequest, now string) (*ScanRequest, error) {
	var q ScanRequest
	err := tx.GetContext(ctx, &q, `SELECT `+scanRequestCols+` FROM scan_requests
		WHERE kind = ? AND coalesce(library_id, 0) = ?`, string(r.Kind), model.Deref(r.LibraryID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	had, err := decodeScanPaths(q.Paths)
	if err != nil {
		return nil, err
	}
	paths := protocol.MergeScanPaths(had, r.Paths)
	raise := r.Priority == protocol.PriorityHigh && q.Priority != protocol.PriorityHigh
	if !raise && protocol.ScanPathsCover(had, paths) {
		return &q, nil
	}
	prio, reason := q.Priority, q.Reason
	if raise {
		prio, reason = protocol.PriorityHigh, r.Reason
	}
	if err := tx.GetContext(ctx, &q, `UPDATE scan_requests SET priority = ?, reason = ?, paths = ?, updated_at = ?
		WHERE id = ? RETURNING `+scanRequestCols, string(prio), reason, encodeScanPaths(paths), now, q.ID); err != nil {
		return nil, err
	}
	return &q, nil
}

// insertJobIfFree inserts a pending job when no scan/hash job holds the
// slot and nobody waits in the queue (a waiting entry would otherwise be
// overtaken). It returns nil, nil when the slot is taken.
func insertJobIfFree(ctx context.Context, tx *sqlx.Tx, r JobRequest, now string) (*model.Job, error) {
	var busy bool
	err := tx.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM jobs WHERE status IN ('pending','running') AND kind IN ('scan','hash'))
		OR EXISTS (SELECT 1 FROM scan_requests)`).Scan(&busy)
	if err != nil || busy {
		return nil, err
	}
	return insertPendingJob(ctx, tx, r.Kind, r.LibraryID, r.Priority, scanPayload(r.Paths), now)
}

// insertPendingJob inserts a pending scan/hash job, or returns nil, nil
// when the single-active slot is taken (a third party, §9.1, may take it
// between the caller's check and this INSERT). Losing the slot must leave
// the transaction usable: on PostgreSQL a failed statement aborts the whole
// transaction (25P02 on every statement after it), so the INSERT does not
// fail at all. ON CONFLICT DO NOTHING without a target covers the partial
// index ix_jobs_single_active_scan_hash on both engines, whose predicates
// differ in text (SQLite's lower()), and jobs has no other unique key an
// insert could hit (id is generated). On PostgreSQL a conflict with a row
// the transaction's snapshot cannot see is a serialization failure
// (40001): write runs the transaction again, and its check then sees the
// slot taken.
func insertPendingJob(ctx context.Context, tx *sqlx.Tx, kind protocol.JobKind, lib *int64, prio protocol.Priority, payload, now string) (*model.Job, error) {
	if slotRaceHook != nil {
		if err := slotRaceHook(ctx, tx); err != nil {
			return nil, err
		}
	}
	var j model.Job
	err := tx.GetContext(ctx, &j, `INSERT INTO jobs (kind, status, library_id, priority, payload, created_at, updated_at)
		VALUES (?, 'pending', ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING *`, string(kind), lib, string(prio), payload, now, now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// slotRaceHook, when set (tests only, export_test.go), runs just before
// insertPendingJob's INSERT, inside its transaction: a test takes the slot
// there as a third party would, between the check and the INSERT.
var slotRaceHook func(ctx context.Context, tx *sqlx.Tx) error

func insertEntry(ctx context.Context, tx *sqlx.Tx, r JobRequest, now string) (*ScanRequest, error) {
	var q ScanRequest
	err := tx.GetContext(ctx, &q, `INSERT INTO scan_requests (kind, library_id, priority, reason, paths, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+scanRequestCols,
		string(r.Kind), r.LibraryID, string(r.Priority), r.Reason, encodeScanPaths(r.Paths), now, now)
	if err != nil {
		return nil, err
	}
	return &q, nil
}

// queuePosition is the 1-based place of q in run order.
func queuePosition(ctx context.Context, tx *sqlx.Tx, q *ScanRequest) (int, error) {
	var ahead int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM scan_requests
		WHERE (kind = 'hash', priority, created_at, id) < (? = 'hash', ?, ?, ?)`, q.Kind, q.Priority, q.CreatedAt, q.ID).Scan(&ahead)
	return ahead + 1, err
}

// ListQueue returns every waiting request in run order. The queue is short
// by construction (one entry per kind and library), so it is not paged.
func (s *Store) ListQueue(ctx context.Context) ([]ScanRequest, error) {
	out := []ScanRequest{}
	if err := s.db.R.SelectContext(ctx, &out, `SELECT `+scanRequestCols+` FROM scan_requests `+queueOrder); err != nil {
		return nil, fmt.Errorf("list queue: %w", err)
	}
	return out, nil
}

// QueueEntry returns a waiting request and its 1-based place in the run
// order, in one read.
func (s *Store) QueueEntry(ctx context.Context, id int64) (ScanRequest, int, error) {
	var row struct {
		ScanRequest
		Position int `db:"position"`
	}
	err := s.db.R.GetContext(ctx, &row, `SELECT `+scanRequestCols+`, 1 + (SELECT count(*) FROM scan_requests o
		WHERE (o.kind = 'hash', o.priority, o.created_at, o.id) < (q.kind = 'hash', q.priority, q.created_at, q.id)) AS position
		FROM scan_requests q WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return row.ScanRequest, 0, fmt.Errorf("queue entry %d: %w", id, sqldb.ErrNotFound)
	}
	if err != nil {
		return row.ScanRequest, 0, fmt.Errorf("queue entry %d: %w", id, err)
	}
	return row.ScanRequest, row.Position, nil
}

// CancelQueueEntry removes a waiting request. A request already promoted
// to a job is no longer in the queue (sqldb.ErrNotFound): cancel the job instead.
func (s *Store) CancelQueueEntry(ctx context.Context, id int64) error {
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM scan_requests WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("cancel queue entry %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("cancel queue entry %d: %w", id, sqldb.ErrNotFound)
	}
	return nil
}

// PromoteQueueHead turns the head of the queue into a pending job when the
// single-active slot is free, deleting the entry in the same transaction.
// It returns nil, nil when the queue is empty or the slot is taken (also
// when a third party took the slot first: the dispatcher retries later).
func (s *Store) PromoteQueueHead(ctx context.Context) (*model.Job, error) {
	var job *model.Job
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		job = nil
		var busy bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs
			WHERE status IN ('pending','running') AND kind IN ('scan','hash'))`).Scan(&busy); err != nil || busy {
			return err
		}
		var q ScanRequest
		err := tx.GetContext(ctx, &q, `SELECT `+scanRequestCols+` FROM scan_requests `+queueOrder+` LIMIT 1`)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		paths, err := decodeScanPaths(q.Paths)
		if err != nil {
			return err
		}
		j, err := insertPendingJob(ctx, tx, protocol.JobKind(q.Kind), q.LibraryID, protocol.Priority(q.Priority), scanPayload(paths), s.db.NowText())
		if err != nil || j == nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM scan_requests WHERE id = ?`, q.ID); err != nil {
			return err
		}
		job = j
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("promote queue head: %w", err)
	}
	return job, nil
}

// QueueReady reports, on the reader pool, whether a promotion could happen
// now: someone waits and the single-active slot is free. The dispatcher
// polls it so that an idle system never takes the write lock.
func (s *Store) QueueReady(ctx context.Context) (bool, error) {
	var ready bool
	err := s.db.R.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM scan_requests)
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE status IN ('pending','running') AND kind IN ('scan','hash'))`).Scan(&ready)
	if err != nil {
		return false, fmt.Errorf("queue ready: %w", err)
	}
	return ready, nil
}
