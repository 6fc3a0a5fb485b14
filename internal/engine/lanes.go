package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// jobOnce claims and runs one scan, hash or delete job. Kinds whose executor this
// process lacks are left to other workers; any other kind in the jobs table
// is claimed and failed with invalid_payload, so a third party's typo never
// blocks the queue.
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
	job, err := e.st.ClaimJob(ctx, e.cfg.WorkerID, e.cfg.Lease, kinds...)
	if err != nil || job == nil {
		return false, err
	}
	e.runJob(*job)
	return true, nil
}

func (e *Engine) runJob(job store.Job) {
	log := e.log.With("job", job.ID, "kind", job.Kind)
	finish := func(o store.JobOutcome) {
		e.persist("job", job.ID, func(ctx context.Context) error {
			return e.st.FinishJob(ctx, job.ID, e.cfg.WorkerID, o)
		})
	}
	exec, err := e.jobExecutor(job)
	if err != nil {
		log.Warn("job refused", "err", err)
		code, msg := errorFields(err, protocol.ErrInvalidPayload)
		finish(store.JobOutcome{Status: protocol.JobFailed, ErrorCode: code, ErrorMessage: msg})
		return
	}
	if job.CancelRequested {
		finish(cancelledOutcome())
		return
	}
	rep := &reporter{}
	var result map[string]int64
	cause, err := e.execute(leased{
		what: "job", id: job.ID,
		beat: func(ctx context.Context) (error, error) {
			return jobStop(e.st.HeartbeatJob(ctx, job.ID, e.cfg.WorkerID, e.cfg.Lease, rep.snapshot()))
		},
		poll: func(ctx context.Context) (error, error) {
			return jobStop(e.st.JobLeaseState(ctx, job.ID, e.cfg.WorkerID))
		},
	}, func(ctx context.Context) error {
		var err error
		result, err = exec.Execute(ctx, job, rep)
		return err
	})
	switch {
	case errors.Is(cause, errLeaseLost):
		log.Warn("lease lost: job stopped, nothing written")
	case store.IsUnavailable(err):
		log.Warn(dbUnavailable, "err", err)
	case err == nil:
		finish(e.completed(job.ID, rep, result))
	case errors.Is(cause, errYieldRequested):
		// The executor committed what it had; the rest is requested again
		// by controld behind the scan (protocol §5).
		log.Info("hash job yielded to a waiting scan", "processed", rep.processed.Load())
		if result == nil {
			result = map[string]int64{}
		}
		result[protocol.ResultYielded] = 1
		finish(e.completed(job.ID, rep, result))
	case errors.Is(cause, errShutdown):
		e.persist("job", job.ID, func(ctx context.Context) error {
			return e.st.ReleaseJob(ctx, job.ID, e.cfg.WorkerID)
		})
	case errors.Is(cause, errCancelRequested):
		finish(cancelledOutcome())
	default:
		code, msg := errorFields(err, protocol.ErrExecutorFailed)
		log.Warn("job failed", "code", code, "err", err)
		finish(store.JobOutcome{Status: protocol.JobFailed, ErrorCode: code, ErrorMessage: msg})
	}
}

// completed is the outcome of a job that ended on its own or yielded. The
// last figures go out on one more heartbeat first (the finish path may not
// write them), so a job shorter than a heartbeat still ends with its
// processed/total counts.
func (e *Engine) completed(id int64, rep *reporter, result map[string]int64) store.JobOutcome {
	e.persist("job", id, func(ctx context.Context) error {
		_, err := e.st.HeartbeatJob(ctx, id, e.cfg.WorkerID, e.cfg.Lease, rep.snapshot())
		return err
	})
	o := store.JobOutcome{Status: protocol.JobCompleted}
	if result != nil {
		b, _ := json.Marshal(result)
		o.Result = string(b)
	}
	return o
}

// jobStop turns a job's signals into the cause its work stops with.
func jobStop(sig store.JobSignals, err error) (stop, _ error) {
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

func cancelledOutcome() store.JobOutcome {
	return store.JobOutcome{Status: protocol.JobCancelled, ErrorCode: protocol.ErrCancelled, ErrorMessage: "cancel requested"}
}

// jobExecutor checks the job's kind and payload before anything runs.
func (e *Engine) jobExecutor(job store.Job) (JobExecutor, error) {
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

// thumbnailOnce claims and renders one thumbnail.
func (e *Engine) thumbnailOnce(ctx context.Context) (bool, error) {
	t, err := e.st.ClaimThumbnail(ctx, e.cfg.WorkerID, e.cfg.Lease)
	if err != nil || t == nil {
		return false, err
	}
	var res ThumbnailResult
	cause, err := e.execute(leased{what: "thumbnail", id: t.ID, beat: func(ctx context.Context) (error, error) {
		return nil, e.st.HeartbeatThumbnail(ctx, t.ID, e.cfg.WorkerID, e.cfg.Lease)
	}}, func(ctx context.Context) error {
		var err error
		res, err = e.ex.Thumbnail.Render(ctx, *t)
		return err
	})
	e.end("thumbnail", t.ID, cause, err, func(ctx context.Context) error {
		if err == nil {
			return e.st.FinishThumbnail(ctx, t.ID, e.cfg.WorkerID, store.ThumbnailDone(res))
		}
		code, msg := errorFields(err, protocol.ErrExecutorFailed)
		return e.st.FailThumbnail(ctx, t.ID, e.cfg.WorkerID, code, msg)
	}, e.st.ReleaseThumbnail)
	return true, nil
}

// cleanupOnce claims and runs one thumbnail cleanup row.
func (e *Engine) cleanupOnce(ctx context.Context) (bool, error) {
	c, err := e.st.ClaimCleanup(ctx, e.cfg.WorkerID, e.cfg.Lease)
	if err != nil || c == nil {
		return false, err
	}
	var files, rows int64
	cause, err := e.execute(leased{what: "cleanup", id: c.ID, beat: func(ctx context.Context) (error, error) {
		return nil, e.st.HeartbeatCleanup(ctx, c.ID, e.cfg.WorkerID, e.cfg.Lease)
	}}, func(ctx context.Context) error {
		var err error
		files, rows, err = e.ex.Cleanup.Clean(ctx, *c)
		return err
	})
	e.end("cleanup", c.ID, cause, err, func(ctx context.Context) error {
		if err == nil {
			return e.st.FinishCleanup(ctx, c.ID, e.cfg.WorkerID, files, rows)
		}
		code, msg := errorFields(err, protocol.ErrExecutorFailed)
		return e.st.FailCleanup(ctx, c.ID, e.cfg.WorkerID, files, rows, code, msg)
	}, e.st.ReleaseCleanup)
	return true, nil
}

// checkpointOnce claims and runs one WAL maintenance row. A busy
// checkpoint (figure or coded error) is retried with backoff; other errors
// fail the row.
func (e *Engine) checkpointOnce(ctx context.Context) (bool, error) {
	w, err := e.st.ClaimCheckpoint(ctx, e.cfg.WorkerID, e.cfg.Lease)
	if err != nil || w == nil {
		return false, err
	}
	var res CheckpointResult
	cause, err := e.execute(leased{what: "wal", id: w.ID, beat: func(ctx context.Context) (error, error) {
		return nil, e.st.HeartbeatCheckpoint(ctx, w.ID, e.cfg.WorkerID, e.cfg.Lease)
	}}, func(ctx context.Context) error {
		var err error
		res, err = e.ex.Checkpoint.Checkpoint(ctx, *w)
		return err
	})
	fig := store.CheckpointFigures(res)
	e.end("wal", w.ID, cause, err, func(ctx context.Context) error {
		switch {
		case err == nil && res.Busy == 0:
			return e.st.SucceedCheckpoint(ctx, w.ID, e.cfg.WorkerID, fig)
		case err == nil || protocol.CodeOf(err, "") == protocol.ErrCheckpointBusy:
			msg := "checkpoint blocked by readers or writers"
			if err != nil {
				_, msg = errorFields(err, protocol.ErrCheckpointBusy)
			}
			return e.st.RetryCheckpoint(ctx, w.ID, e.cfg.WorkerID, fig, protocol.ErrCheckpointBusy, msg, int(e.walMaxRetries.Load()))
		default:
			code, msg := errorFields(err, protocol.ErrCheckpointFailed)
			return e.st.FailCheckpoint(ctx, w.ID, e.cfg.WorkerID, code, msg)
		}
	}, e.st.ReleaseCheckpoint)
	return true, nil
}

// dbUnavailable: work that failed because the database could not be
// reached (PostgreSQL restarted, the network cut) is not at fault, so it is
// not ended failed: nothing is written, and once its lease expires the row
// is recovered and run again.
const dbUnavailable = "database unreachable: work stopped, nothing written; the row runs again once its lease expires"

// end writes how a non-job row ended: nothing when the lease was lost, the
// executor's outcome when it returned on its own (or succeeded anyway), a
// release when shutdown cancelled it.
func (e *Engine) end(what string, id int64, cause, err error, outcome func(ctx context.Context) error,
	release func(ctx context.Context, id int64, workerID string) error) {
	switch {
	case errors.Is(cause, errLeaseLost):
		e.log.Warn("lease lost: work stopped, nothing written", "row", what, "id", id)
	case store.IsUnavailable(err):
		e.log.Warn(dbUnavailable, "row", what, "id", id, "err", err)
	case err != nil && errors.Is(cause, errShutdown):
		e.persist(what, id, func(ctx context.Context) error { return release(ctx, id, e.cfg.WorkerID) })
	default:
		e.persist(what, id, outcome)
	}
}
