package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/protocol"
)

// dispatchOnce follows up the jobs that finished since the last tick, then
// promotes the queue head when the single-active slot is free. Doing both
// in one tick means the hash job after a scan (or the rest of a hash job
// that yielded) is queued and promoted with no period in between. The
// cheap probes run on the reader pool, so an idle system never takes the
// write lock; losing the INSERT to the unique index is not an error (the
// next tick tries again).
//
// The items it reports are promotions; follow-ups are counted under the
// service name "followups".
func (s *Scheduler) dispatchOnce(ctx context.Context) (int64, error) {
	followed, ferr := s.followUpJobs(ctx)
	if followed > 0 {
		s.metrics.items.WithLabelValues("followups").Add(float64(followed))
	}
	ready, err := s.q.QueueReady(ctx)
	if err != nil || !ready {
		return 0, errors.Join(ferr, err)
	}
	job, err := s.q.PromoteQueueHead(ctx)
	if err != nil || job == nil {
		return 0, errors.Join(ferr, err)
	}
	s.cfg.Logger.Info("queue head promoted", "job", job.ID, "kind", job.Kind,
		"library", job.Library(), "priority", job.Priority)
	return 1, ferr
}

// admitCoversTick admits covers for every library with flagged files
// (that is what a running scan produces, batch by batch), then, in the
// capacity they leave, one batch of hash rows for covers rendered before
// covers had hashes (store.AdmitCoverHashes).
func (s *Scheduler) admitCoversTick(ctx context.Context) (int64, error) {
	v, err := settings.Load(ctx, s.st)
	if err != nil {
		return 0, err
	}
	n, err := s.admitCovers(ctx, v)
	if err != nil {
		return n, err
	}
	hashes, err := s.th.AdmitCoverHashes(ctx, s.cfg.CoverBatch, v.Int(settings.ThumbnailQueueCapacity))
	return n + hashes, err
}

// maxAdmitBatches bounds one tick's admission per library, so one huge
// library cannot keep the service from its other work.
const maxAdmitBatches = 20

func (s *Scheduler) admitCovers(ctx context.Context, v settings.Values) (int64, error) {
	libs, err := s.q.LibrariesNeedingCovers(ctx)
	if err != nil {
		return 0, err
	}
	format := protocol.ImageFormat(v.Enum(settings.ScanCoverFormat))
	capacity, shards := v.Int(settings.ThumbnailQueueCapacity), v.Int(settings.CoverCacheShardCount)
	var total int64
	for _, lib := range libs {
		for range maxAdmitBatches {
			n, err := s.covers.AdmitPendingCovers(ctx, lib, s.cfg.CoverBatch, capacity, shards, format)
			total += n
			if errors.Is(err, store.ErrQueueFull) {
				return total, nil // capacity is full: the next tick continues
			}
			if err != nil {
				return total, fmt.Errorf("admit covers of library %d: %w", lib, err)
			}
			if n < int64(s.cfg.CoverBatch) {
				break
			}
		}
	}
	return total, nil
}

// followUpJobs follows up every finished job exactly once: after a
// completed scan with scan.hash.mode=full, a normal-priority hash job of
// its library; after a hash job that yielded to a scan, the same hash job
// again, queued behind the scan. It walks the finished jobs not yet marked
// followed_up (every other finished job is marked too, with nothing to
// do), from the lowest id on every tick: no id floor is kept, since on
// PostgreSQL a job can commit after one with a higher id. Settings are
// read only when there is something to follow up.
func (s *Scheduler) followUpJobs(ctx context.Context) (done int64, err error) {
	var after int64
	hashAfterScan := func() (bool, error) {
		v, err := settings.Load(ctx, s.st)
		return err == nil && v.Enum(settings.ScanHashMode) == "full", err
	}
	for {
		jobs, err := s.q.JobsToFollowUp(ctx, after, 100)
		if err != nil || len(jobs) == 0 {
			return done, err
		}
		full, err := hashAfterScan()
		if err != nil {
			return done, err
		}
		for _, j := range jobs {
			after = j.ID
			ok, hash, err := s.q.FollowUpJob(ctx, j.ID, full)
			if err != nil {
				return done, err
			}
			if !ok {
				continue
			}
			done++
			if hash != nil {
				s.cfg.Logger.Info("hash requested", "after_job", j.ID, "kind", j.Kind, "library", j.Library(),
					"created", hash.Created, "queued", hash.Queued != nil)
			}
		}
		if len(jobs) < 100 {
			return done, nil
		}
	}
}

// scheduledScans requests the periodic scans that are due.
func (s *Scheduler) scheduledScans(ctx context.Context) (int64, error) {
	outs, err := s.q.RequestScheduledScans(ctx)
	if len(outs) > 0 {
		s.Kick()
	}
	return int64(len(outs)), err
}

// recoverStale takes back the rows of dead workers (protocol §4).
func (s *Scheduler) recoverStale(ctx context.Context) (int64, error) {
	c, err := s.ls.RecoverStale(ctx)
	if c.Total() > 0 {
		s.cfg.Logger.Warn("recovered stale leases", "jobs", c.Jobs, "thumbnails", c.Thumbnails,
			"cleanup", c.Cleanup, "wal", c.WAL)
	}
	return c.Total(), err
}

// retries re-queues retryable jobs and failed thumbnails whose retry_after
// passed.
func (s *Scheduler) retries(ctx context.Context) (int64, error) {
	v, err := settings.Load(ctx, s.st)
	if err != nil {
		return 0, err
	}
	requeued, failed, jobErr := s.ls.RequeueRetryableJobs(ctx, int(v.Int(settings.JobsMaxAttempts)))
	thumbs, thumbErr := s.ls.RequeueFailedThumbnails(ctx)
	if failed > 0 {
		s.cfg.Logger.Warn("jobs gave up after their last attempt", "count", failed)
	}
	return requeued + failed + thumbs, errors.Join(jobErr, thumbErr)
}

// retention deletes old rows batch by batch, pausing between batches so
// that workers get the write lock in between.
func (s *Scheduler) retention(ctx context.Context) (int64, error) {
	v, err := settings.Load(ctx, s.st)
	if err != nil {
		return 0, err
	}
	now := s.st.Now()
	jobsAge := time.Duration(v.Int(settings.JobsRetentionHours)) * time.Hour
	p := queue.RetentionPolicy{
		JobsBefore:        now.Add(-jobsAge),
		FailedBefore:      now.Add(-max(jobsAge, s.cfg.MaintenanceRetention)),
		MaintenanceBefore: now.Add(-s.cfg.MaintenanceRetention),
		KeepSessions:      s.cfg.KeepScanSessions,
	}
	var total int64
	for _, del := range []func(context.Context, queue.RetentionPolicy, int) (int64, error){
		s.q.DeleteOldJobs, s.q.PruneScanSessions, s.q.DeleteOldMaintenance,
	} {
		for {
			n, err := del(ctx, p, s.cfg.RetentionBatch)
			total += n
			if err != nil {
				return total, err
			}
			if n == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return total, ctx.Err()
			case <-time.After(retentionPause):
			}
		}
	}
	return total, nil
}

// retentionPause is the breath between two retention batches.
const retentionPause = 20 * time.Millisecond

// walCheckpoints enqueues the periodic passive checkpoint (the interval is
// its own minimum spacing: the request is refused until it is due) and a
// truncate checkpoint when the -wal file outgrew its threshold.
func (s *Scheduler) walCheckpoints(ctx context.Context) (int64, error) {
	wal, ok := s.st.WALFile()
	if !ok {
		return 0, nil // a server database checkpoints itself
	}
	v, err := settings.Load(ctx, s.st)
	if err != nil {
		return 0, err
	}
	var n int64
	if fi, err := os.Stat(wal); err == nil {
		threshold := v.Int(settings.WALCheckpointTruncateMB) << 20
		if fi.Size() > threshold {
			minGap := time.Duration(v.Int(settings.WALCheckpointMinIntervalSec)) * time.Second
			reason := fmt.Sprintf("wal is %d MiB, over %d MiB", fi.Size()>>20, threshold>>20)
			created, err := s.enqueue(ctx, protocol.CheckpointTruncate, reason, minGap)
			if err != nil {
				return n, err
			}
			n += created
		}
	}
	if every := time.Duration(v.Int(settings.WALCheckpointIntervalMin)) * time.Minute; every > 0 {
		created, err := s.enqueue(ctx, protocol.CheckpointPassive, "schedule", every)
		if err != nil {
			return n, err
		}
		n += created
	}
	return n, nil
}

func (s *Scheduler) enqueue(ctx context.Context, mode protocol.CheckpointMode, reason string, minGap time.Duration) (int64, error) {
	w, created, err := s.st.EnqueueCheckpoint(ctx, mode, reason, false, minGap)
	if errors.Is(err, store.ErrQueueFull) {
		return 0, nil // not due yet
	}
	if err != nil || !created {
		return 0, err
	}
	s.cfg.Logger.Info("checkpoint enqueued", "id", w.ID, "mode", mode, "reason", reason)
	return 1, nil
}

// missingCleanups schedules cover cleanups of files missing for longer
// than cleanup.missing_after_hours, and follows a change of
// cover.cache.shard_count: covers in the old layout are flagged for a
// render in the new one, and a shards:<n> cleanup removes the old files
// once their replacements exist (it is enqueued again on every pass while
// old-layout rows remain, so it converges as renders complete).
func (s *Scheduler) missingCleanups(ctx context.Context) (int64, error) {
	v, err := settings.Load(ctx, s.st)
	if err != nil {
		return 0, err
	}
	n, err := s.cleanups.ScheduleMissingCleanups(ctx, time.Duration(v.Int(settings.CleanupMissingAfterHours))*time.Hour)
	if err != nil {
		return n, err
	}
	shards := v.Int(settings.CoverCacheShardCount)
	stale, err := s.th.HasStaleLayoutCovers(ctx, shards)
	if err != nil || !stale {
		return n, err
	}
	flagged, err := s.th.FlagStaleLayoutCovers(ctx, shards)
	if err != nil {
		return n, err
	}
	if _, err := s.th.EnqueueCleanup(ctx, fmt.Sprintf("shards:%d", shards), s.st.Now()); err != nil {
		return n, err
	}
	s.cfg.Logger.Info("cover layout changed", "shard_count", shards, "flagged", flagged)
	return n + flagged + 1, nil
}

// trashPurges schedules the purge of every delete job's trash older than
// trash.retention_days (0 keeps it); workerd removes the files.
func (s *Scheduler) trashPurges(ctx context.Context) (int64, error) {
	v, err := settings.Load(ctx, s.st)
	if err != nil {
		return 0, err
	}
	days := v.Int(settings.TrashRetentionDays)
	if days == 0 {
		return 0, nil
	}
	return s.dp.SchedulePurges(ctx, s.st.Now().Add(-time.Duration(days)*24*time.Hour), purgeBatch)
}

// purgeBatch bounds the purges one pass schedules.
const purgeBatch = 100
