package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/protocol"
)

// jobOnce claims and runs one scan, hash or delete job. The claim asks only
// for the kinds whose executor this process has: rows of other kinds
// (thumbnail, or a kind this process lacks) are neither claimed nor
// touched, and wait for a worker that runs them (protocol §4.2). A claimed
// row whose payload does not parse is failed with invalid_payload, so a
// third party's typo never blocks the queue.
func (e *Engine) jobOnce(ctx context.Context) (bool, error) {
	var kinds []protocol.JobKind
	if e.ex.Scan != nil {
		kinds = append(kinds, protocol.JobKindScan)
	}
	if e.ex.Hash != nil {
		kinds = append(kinds, protocol.JobKindHash)
	}
	if e.ex.Delete != nil {
		kinds = append(kinds, protocol.JobKindDelete)
	}
	if len(kinds) == 0 {
		return false, nil
	}
	ctx, cancel := e.claimContext(ctx)
	defer cancel()
	job, err := e.ls.ClaimJob(ctx, e.cfg.WorkerID, e.cfg.Lease, kinds...)
	if err != nil || job == nil {
		return false, err
	}
	e.runJob(*job)
	return true, nil
}

func (e *Engine) runJob(job model.Job) {
	if job.Kind == protocol.JobKindScan || job.Kind == protocol.JobKindHash {
		e.scanStart.Lock()
		e.scanning.Add(1)
		e.scanStart.Unlock()
		defer e.scanning.Add(-1)
	}
	log := e.log.With("job", job.ID, "kind", job.Kind)
	finish := func(o leases.JobOutcome) {
		e.persist("job", job.ID, func(ctx context.Context) error {
			return e.ls.FinishJob(ctx, job.Fence(), o)
		})
	}
	exec, err := e.jobExecutor(job)
	if err != nil {
		log.Warn("job refused", "err", err)
		code, msg := errorFields(err, protocol.ErrInvalidPayload)
		finish(leases.JobOutcome{Status: protocol.JobFailed, ErrorCode: code, ErrorMessage: msg})
		return
	}
	if job.CancelRequested {
		if rc, ok := exec.(Reconciler); ok {
			ctx, cancel := context.WithTimeout(e.bgCtx(), e.cfg.Lease)
			err := rc.Reconcile(ctx, job)
			cancel()
			if err != nil {
				log.Warn("cancelled job not reconciled; a later claim tries again", "err", err)
				return // the lease expires and the row is recovered
			}
		}
		finish(cancelledOutcome())
		return
	}
	rep := &reporter{}
	var result map[string]int64
	cause, err := e.execute(leased{
		what: "job", id: job.ID, expires: job.LeaseExpiresAt,
		beat: func(ctx context.Context) (error, error) {
			return jobStop(e.ls.HeartbeatJob(ctx, job.Fence(), e.cfg.Lease, rep.snapshot()))
		},
		poll: func(ctx context.Context) (error, error) {
			return jobStop(e.ls.JobLeaseState(ctx, job.Fence()))
		},
	}, func(ctx context.Context) error {
		var err error
		result, err = exec.Execute(ctx, job, rep)
		return err
	})
	switch {
	case errors.Is(cause, ErrLeaseLost):
		log.Warn("lease lost: job stopped, nothing written")
	case store.IsUnavailable(err):
		log.Warn(dbUnavailable, "err", err)
	case err == nil:
		if o, ok := e.completed(job.Fence(), rep, result); ok {
			finish(o)
		}
	case errors.Is(cause, errYieldRequested):
		// The executor committed what it had; the rest is requested again
		// by controld behind the scan (protocol §5).
		log.Info("hash job yielded to a waiting scan", "processed", rep.processed.Load())
		if result == nil {
			result = map[string]int64{}
		}
		result[protocol.ResultYielded] = 1
		if o, ok := e.completed(job.Fence(), rep, result); ok {
			finish(o)
		}
	case errors.Is(cause, errShutdown):
		e.persist("job", job.ID, func(ctx context.Context) error {
			return e.ls.ReleaseLease(ctx, job.Fence())
		})
	case errors.Is(cause, errCancelRequested):
		finish(cancelledOutcome())
	default:
		code, msg := errorFields(err, protocol.ErrExecutorFailed)
		log.Warn("job failed", "code", code, "err", err)
		finish(leases.JobOutcome{Status: protocol.JobFailed, ErrorCode: code, ErrorMessage: msg})
	}
}

// completed is the outcome of a job that ended on its own or yielded. The
// last figures go out on one more heartbeat first (the finish path may not
// write them), so a job shorter than a heartbeat still ends with its
// processed/total counts. ok is false when that heartbeat was refused:
// the row is no longer ours, or its lease ran out (the store never
// extends an expired lease) and recovery may take it any moment; the
// result is then dropped, as persist logs, and nothing more is written.
func (e *Engine) completed(f model.Fence, rep *reporter, result map[string]int64) (o leases.JobOutcome, ok bool) {
	if !e.persist("job", f.ID, func(ctx context.Context) error {
		_, err := e.ls.HeartbeatJob(ctx, f, e.cfg.Lease, rep.snapshot())
		return err
	}) {
		return o, false
	}
	o = leases.JobOutcome{Status: protocol.JobCompleted}
	if result != nil {
		b, _ := json.Marshal(result)
		o.Result = string(b)
	}
	return o, true
}

// jobStop turns a job's signals into the cause its work stops with.
func jobStop(sig leases.JobSignals, err error) (stop, _ error) {
	switch {
	case err != nil:
		return nil, err
	case sig.CancelRequested:
		return errCancelRequested, nil
	case sig.ScanWaiting:
		return errYieldRequested, nil
	}
	return nil, nil
}

func cancelledOutcome() leases.JobOutcome {
	return leases.JobOutcome{Status: protocol.JobCancelled, ErrorCode: protocol.ErrCancelled, ErrorMessage: "cancel requested"}
}

// jobExecutor checks the job's kind and payload before anything runs.
func (e *Engine) jobExecutor(job model.Job) (JobExecutor, error) {
	// The kind needs no parsing: the database's CHECK admits only protocol
	// kinds, and the ones workerd does not run fall to the default.
	kind := job.Kind
	var exec JobExecutor
	var payload any
	switch kind {
	case protocol.JobKindScan:
		exec, payload = e.ex.Scan, &protocol.ScanPayload{}
	case protocol.JobKindHash:
		exec, payload = e.ex.Hash, &protocol.HashPayload{}
	case protocol.JobKindDelete:
		exec, payload = e.ex.Delete, &protocol.DeletePayload{}
	default:
		return nil, protocol.Errorf(protocol.ErrInvalidPayload, "workerd does not execute jobs of kind %q", kind)
	}
	if err := protocol.DecodePayload(job.Payload, payload); err != nil {
		return nil, protocol.Wrap(protocol.ErrInvalidPayload, err)
	}
	if exec == nil { // excluded from the claim; only a race with a config change lands here
		return nil, protocol.Errorf(protocol.ErrInvalidPayload, "no executor for kind %q", kind)
	}
	return exec, nil
}

// rowLane is the lane of a lease table whose rows each run to one result,
// R: covers, cleanups, WAL checkpoints (jobs have their own lane: progress,
// signals, cancel). claim takes a row of the table, run is its executor,
// end writes how the row ended, from the result or the executor's error.
type rowLane[T, R any] struct {
	claim func(ctx context.Context, workerID string, lease time.Duration) (*T, error)
	lease func(row *T) (model.Fence, *protocol.Time)
	run   func(ctx context.Context, row T) (R, error)
	end   func(ctx context.Context, f model.Fence, res R, err error) error
	// deadline, when set, bounds how long run may take (leased.deadline);
	// past it the row ends with timeout's error.
	deadline func() (time.Duration, error)
}

// runRow claims one row of l's table and runs it under its lease
// (runLeased); false when there was none.
func runRow[T, R any](ctx context.Context, e *Engine, l rowLane[T, R]) (bool, error) {
	ctx, cancel := e.claimContext(ctx)
	defer cancel()
	row, err := l.claim(ctx, e.cfg.WorkerID, e.cfg.Lease)
	if err != nil || row == nil {
		return false, err
	}
	f, expires := l.lease(row)
	var res R
	lease := leased{expires: expires}
	var timeout error
	if l.deadline != nil {
		lease.deadline, timeout = l.deadline()
	}
	e.runLeased(f, lease, func(ctx context.Context) (err error) {
		res, err = l.run(ctx, *row)
		return err
	}, func(ctx context.Context, cause, err error) error {
		if err != nil && errors.Is(cause, errDeadline) {
			err = timeout
		}
		return l.end(ctx, f, res, err)
	})
	return true, nil
}

// thumbnailOnce claims and renders one thumbnail; besideJobs: see
// claimCoverBesideJobs.
func (e *Engine) thumbnailOnce(besideJobs bool) func(context.Context) (bool, error) {
	claim := e.ls.ClaimThumbnail
	if besideJobs {
		claim = e.claimCoverBesideJobs
	}
	return func(ctx context.Context) (bool, error) {
		return runRow(ctx, e, rowLane[model.Thumbnail, ThumbnailResult]{
			claim: claim,
			lease: func(t *model.Thumbnail) (model.Fence, *protocol.Time) { return t.Fence(), t.LeaseExpiresAt },
			run:   e.ex.Thumbnail.Render,
			deadline: func() (time.Duration, error) {
				d := time.Duration(e.renderTimeout.Load())
				return d, protocol.Errorf(protocol.ErrRenderTimeout, "the render ran past thumbnail.render_timeout_seconds (%v) and was cancelled", d)
			},
			end: func(ctx context.Context, f model.Fence, res ThumbnailResult, err error) error {
				if err == nil {
					return e.ls.FinishThumbnail(ctx, f, leases.ThumbnailDone(res))
				}
				code, msg := errorFields(err, protocol.ErrExecutorFailed)
				return e.ls.FailThumbnail(ctx, f, code, msg)
			}})
	}
}

// claimCoverBesideJobs is the claim of every thumbnail lane but the
// first: while this process runs a scan or a hash job it claims nothing,
// so covers render one at a time. On a NAS's two or four cores a render
// per core took the cores a first scan and its duplicate search need, and
// a first run's groups came later by about the time the covers took
// (issue 40); the covers catch up once the job ends. A job's start waits
// for the claims under way (scanStart), so no cover claimed after it
// begins runs beside it.
func (e *Engine) claimCoverBesideJobs(ctx context.Context, workerID string, lease time.Duration) (*model.Thumbnail, error) {
	e.scanStart.RLock()
	defer e.scanStart.RUnlock()
	if e.scanning.Load() > 0 {
		return nil, nil
	}
	return e.ls.ClaimThumbnail(ctx, workerID, lease)
}

// cleaned is what a cleanup row removed.
type cleaned struct{ files, rows int64 }

// cleanupOnce claims and runs one thumbnail cleanup row.
func (e *Engine) cleanupOnce(ctx context.Context) (bool, error) {
	return runRow(ctx, e, rowLane[model.CleanupJob, cleaned]{
		claim: e.ls.ClaimCleanup,
		lease: func(c *model.CleanupJob) (model.Fence, *protocol.Time) { return c.Fence(), c.LeaseExpiresAt },
		run: func(ctx context.Context, c model.CleanupJob) (res cleaned, err error) {
			res.files, res.rows, err = e.ex.Cleanup.Clean(ctx, c)
			return res, err
		},
		end: func(ctx context.Context, f model.Fence, res cleaned, err error) error {
			if err == nil {
				return e.ls.FinishCleanup(ctx, f, res.files, res.rows)
			}
			code, msg := errorFields(err, protocol.ErrExecutorFailed)
			return e.ls.FailCleanup(ctx, f, res.files, res.rows, code, msg)
		}})
}

// checkpointOnce claims and runs one WAL maintenance row. A busy
// checkpoint (figure or coded error) is retried with backoff; other errors
// fail the row.
func (e *Engine) checkpointOnce(ctx context.Context) (bool, error) {
	return runRow(ctx, e, rowLane[model.WALJob, CheckpointResult]{
		claim: e.ls.ClaimCheckpoint,
		lease: func(w *model.WALJob) (model.Fence, *protocol.Time) { return w.Fence(), w.LeaseExpiresAt },
		run:   e.ex.Checkpoint.Checkpoint,
		end: func(ctx context.Context, f model.Fence, res CheckpointResult, err error) error {
			fig := leases.CheckpointFigures(res)
			switch {
			case err == nil && res.Busy == 0:
				return e.ls.SucceedCheckpoint(ctx, f, fig)
			case err == nil || protocol.CodeOf(err, "") == protocol.ErrCheckpointBusy:
				msg := "checkpoint blocked by readers or writers"
				if err != nil {
					_, msg = errorFields(err, protocol.ErrCheckpointBusy)
				}
				return e.ls.RetryCheckpoint(ctx, f, fig, protocol.ErrCheckpointBusy, msg, int(e.walMaxRetries.Load()))
			default:
				code, msg := errorFields(err, protocol.ErrCheckpointFailed)
				return e.ls.FailCheckpoint(ctx, f, code, msg)
			}
		}})
}

// claimContext is the context a claim runs with: a shutdown that begins
// during the claim does not cancel it, bounded by one lease. Cancelled, a
// claim the database had already committed (PostgreSQL commits, then the
// client stops reading the answer) would be dropped unrun, its row held by
// this worker until the shutdown releases it; seen through, its work runs
// within the shutdown's grace.
func (e *Engine) claimContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.cfg.Lease)
}

// dbUnavailable: work that failed because the database could not be
// reached (PostgreSQL restarted, the network cut) is not at fault, so it is
// not ended failed: nothing is written, and once its lease expires the row
// is recovered and run again.
const dbUnavailable = "database unreachable: work stopped, nothing written; the row runs again once its lease expires"

// runLeased runs the claimed cover, cleanup or WAL row of claim f under
// its lease (execute), then writes how it ended: nothing when the lease was
// lost or the database is gone, a release when shutdown cancelled it,
// else outcome (the executor's result, or its error, written as the
// table's end).
func (e *Engine) runLeased(f model.Fence, l leased, run func(ctx context.Context) error,
	outcome func(ctx context.Context, cause, err error) error) {
	what := string(f.Table)
	l.what, l.id = what, f.ID
	l.beat = func(ctx context.Context) (error, error) { return nil, e.ls.HeartbeatLease(ctx, f, e.cfg.Lease) }
	cause, err := e.execute(l, run)
	switch {
	case errors.Is(cause, ErrLeaseLost), errors.Is(err, store.ErrNotOwner):
		e.log.Warn("lease lost: work stopped, nothing written", "row", what, "id", f.ID)
	case store.IsUnavailable(err):
		e.log.Warn(dbUnavailable, "row", what, "id", f.ID, "err", err)
	case err != nil && errors.Is(cause, errShutdown):
		e.persist(what, f.ID, func(ctx context.Context) error { return e.ls.ReleaseLease(ctx, f) })
	default:
		e.persist(what, f.ID, func(ctx context.Context) error { return outcome(ctx, cause, err) })
	}
}
