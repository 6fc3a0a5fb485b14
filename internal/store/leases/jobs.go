package leases

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// Lease paths of the jobs table (protocol §4.2, §7.1). Every statement here
// writes only the columns protocol.Whitelist names for its path, and every
// path after the claim is owner-checked: it matches id, worker_id and
// status='running', and reports sqldb.ErrNotOwner when the row was recovered,
// released or finished by someone else meanwhile.

// ClaimJob claims the first eligible job, recovering the table's stale
// rows first when the claim probes (claimGate): pending, high priority before
// normal ('high' < 'normal', so ix_jobs_claim serves the order), then oldest
// created_at, then id. The claim raises lease_epoch, so the returned Job's
// Fence names this claim and no earlier one. Only rows of the given kinds are claimed (default:
// scan and hash, the kinds workerd runs): a legal row of another kind
// (delete, thumbnail) stays untouched for a worker that can run it. It
// returns nil, nil when nothing is eligible.
func (s *Leases) ClaimJob(ctx context.Context, workerID string, lease time.Duration, kinds ...protocol.JobKind) (*model.Job, error) {
	if len(kinds) == 0 {
		kinds = []protocol.JobKind{protocol.JobKindScan, protocol.JobKindHash}
	}
	filter := " AND kind IN (?" + strings.Repeat(",?", len(kinds)-1) + ")"
	args := make([]any, len(kinds))
	for i, k := range kinds {
		args[i] = string(k)
	}
	probe := `SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'pending'` + filter + `)
		, EXISTS (SELECT 1 FROM jobs WHERE ` + staleWhere + `)`
	claim := `UPDATE jobs SET status = 'running', worker_id = ?, worker_heartbeat_at = ?, lease_expires_at = ?,
		started_at = ?, updated_at = ?, lease_epoch = lease_epoch + 1
		WHERE id = (SELECT id FROM jobs WHERE status = 'pending'` + filter + ` ORDER BY priority, created_at, id LIMIT 1` + s.skipLocked() + `)
		AND status = 'pending' RETURNING *`
	job, err := claimRow[model.Job](ctx, s, claimPath{gate: &s.gates.jobs, probe: probe, rowLocked: true,
		probeArgs: func(now string) []any { return append(append([]any{}, args...), now) },
		recover:   recoverStaleJobs,
		query:     claim,
		args:      func(now, expires string) []any { return append([]any{workerID, now, expires, now, now}, args...) }}, lease)
	if err != nil {
		return nil, fmt.Errorf("claim job: %w", err)
	}
	return job, nil
}

// JobProgress is what a heartbeat reports. Total ≤ 0 means unknown: the
// stored total_items is kept and progress is left as it was.
type JobProgress struct {
	Processed, Total int64
}

// JobSignals is what controld and the queue ask of a running job.
type JobSignals struct {
	// CancelRequested: controld set cancel_requested.
	CancelRequested bool `db:"cancel_requested"`
	// ScanWaiting: the job is a hash job and a scan waits in scan_requests,
	// so the job must yield the single-active slot (protocol §5).
	ScanWaiting bool `db:"scan_waiting"`
}

// jobSignals reads JobSignals in a RETURNING or SELECT list of jobs.
const jobSignals = `cancel_requested,
	kind = 'hash' AND EXISTS (SELECT 1 FROM scan_requests WHERE kind = 'scan') AS scan_waiting`

// HeartbeatJob extends the lease of a job this worker owns and records its
// progress on the same write. It reports the job's signals. An expired
// lease is never extended (sqldb.ErrNotOwner): the row is stale and belongs to
// recovery, so a heartbeat that a stalled disk delayed past the lease
// cannot bring it back to a worker that has already given it up.
func (s *Leases) HeartbeatJob(ctx context.Context, f model.Fence, lease time.Duration, p JobProgress) (sig JobSignals, err error) {
	err = s.db.WriteOne(ctx, func(q sqlx.ExtContext) error {
		now := s.db.Now()
		ts, exp := protocol.FormatTime(now), protocol.FormatTime(now.Add(lease))
		frac := -1.0
		if p.Total > 0 {
			frac = min(max(float64(p.Processed)/float64(p.Total), 0), 1)
		}
		return sqlx.GetContext(ctx, q, &sig, `UPDATE jobs SET processed_items = ?,
			total_items = CASE WHEN ? > 0 THEN ? ELSE total_items END,
			progress = CASE WHEN ? >= 0 THEN ? ELSE progress END,
			worker_heartbeat_at = ?, lease_expires_at = ?, updated_at = ?
			WHERE id = ? AND worker_id = ? AND status = 'running' AND lease_epoch = ? AND lease_expires_at > ?
			RETURNING `+jobSignals, p.Processed, p.Total, p.Total, frac, frac, ts, exp, ts, f.ID, f.WorkerID, f.Epoch, ts)
	})
	return sig, fenceErr("heartbeat job", f, err)
}

// JobLeaseState reads, without writing, whether this worker still owns the
// job, and its signals. The engine polls it every
// scan.cancel_check.interval_ms, far more often than it heartbeats.
func (s *Leases) JobLeaseState(ctx context.Context, f model.Fence) (sig JobSignals, err error) {
	err = s.db.R.GetContext(ctx, &sig, `SELECT `+jobSignals+` FROM jobs
		WHERE id = ? AND worker_id = ? AND status = 'running' AND lease_epoch = ?`, f.ID, f.WorkerID, f.Epoch)
	return sig, fenceErr("job lease state", f, err)
}

// JobOutcome is how a job ends. Status must be terminal (completed, failed,
// cancelled); Result is the result JSON (empty for none).
type JobOutcome struct {
	Status       protocol.JobStatus
	Result       string
	ErrorCode    string
	ErrorMessage string
}

// FinishJob ends the job of claim f (protocol §4.2): terminal status,
// finished_at, error fields (cleared on completion), lease_expires_at
// cleared. worker_id stays as the record of who ran it. It is fenced as
// the job's data writes are: a claim whose lease ran out, even one not yet
// recovered, writes no end (ErrLeaseLost), so the row goes to recovery
// and nothing the job did after its lease counts as finished.
func (s *Leases) FinishJob(ctx context.Context, f model.Fence, o JobOutcome) error {
	if !o.Status.Terminal() {
		return fmt.Errorf("finish job %d: status %q is not terminal", f.ID, o.Status)
	}
	ts := s.db.NowText()
	return s.endLease(ctx, "finish job", f, `UPDATE jobs SET status = ?,
		progress = CASE WHEN ? = 'completed' THEN 1 ELSE progress END,
		result = ?, error_code = ?, error_message = ?, finished_at = ?, lease_expires_at = NULL, updated_at = ?
		WHERE `+fenceWhere, o.Status, o.Status, nullText(o.Result), nullText(o.ErrorCode), nullText(o.ErrorMessage), ts, ts)
}

const releaseJobSQL = `UPDATE jobs SET status = 'retryable', worker_id = NULL, worker_heartbeat_at = NULL,
	lease_expires_at = NULL, error_code = ?, error_message = ?, updated_at = ?
	WHERE worker_id = ? AND status = 'running'`

func releaseJobArgs(ts, workerID string) []any {
	return []any{protocol.ErrWorkerShutdown, "worker shut down before the job finished", ts, workerID}
}

// nullText stores "" as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}
