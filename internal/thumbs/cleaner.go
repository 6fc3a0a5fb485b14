package thumbs

import (
	"context"
	"errors"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// cleanBatch is how many thumbnail rows one cleanup step handles.
const cleanBatch = 200

// Cleaner runs claimed thumbnail_cleanup_jobs rows
// (engine.CleanupExecutor): it deletes the cache files and the ready/failed
// thumbnail rows of the row's group (store.CleanupCandidates says which),
// and nothing else: never a file outside <state>/covers, never a library
// file, never a pending/running row, never a cache file another live row
// still points at.
type Cleaner struct {
	st    *store.Store
	ls    *leases.Leases
	th    *thumbnails.Store
	cache *cache
}

var _ engine.CleanupExecutor = (*Cleaner)(nil)

// NewCleaner returns a cleaner of the cache under cfg.StateDir/covers.
func NewCleaner(st *store.Store, cfg Config) *Cleaner {
	cfg = cfg.withDefaults()
	return &Cleaner{st: st, ls: leases.New(st), th: thumbnails.New(st), cache: newCache(cfg.StateDir, cfg.StaleTempAge)}
}

// Clean deletes files first, then rows, batch by batch, so a crash at any
// point leaves rows whose files may be gone, and running the cleanup again
// (it is idempotent: a missing file is no error) finishes the job.
func (c *Cleaner) Clean(ctx context.Context, job model.CleanupJob) (deletedFiles, deletedRows int64, err error) {
	if _, err := thumbnails.ParseCleanupKey(job.GroupKey); err != nil {
		return 0, 0, protocol.Wrap(protocol.ErrInvalidPayload, err)
	}
	var after int64
	for {
		if err := ctx.Err(); err != nil {
			return deletedFiles, deletedRows, err
		}
		rows, err := c.th.CleanupCandidates(ctx, job.GroupKey, after, cleanBatch)
		if err != nil {
			return deletedFiles, deletedRows, protocol.Wrap(protocol.ErrIOError, err)
		}
		if len(rows) == 0 {
			return deletedFiles, deletedRows, nil
		}
		after = rows[len(rows)-1].ID
		files, n, err := c.cleanBatch(ctx, job.Fence(), rows)
		deletedFiles += files
		deletedRows += n
		if err != nil {
			return deletedFiles, deletedRows, err
		}
	}
}

// cleanBatch removes one batch's cache files, then its rows. Before the
// files go it asks whether the claim is still live: a cleaner that lost its
// lease (frozen past it, then thawed) must not remove covers that the
// rows' new renders may already have written. The rows' delete is fenced.
func (c *Cleaner) cleanBatch(ctx context.Context, lease model.Fence, rows []model.Thumbnail) (files, deleted int64, err error) {
	ids := make([]int64, len(rows))
	paths := make([]string, 0, len(rows))
	for i, t := range rows {
		ids[i] = t.ID
		paths = append(paths, t.OutputRelpath)
	}
	if err := c.ls.CheckFence(ctx, lease); err != nil {
		return 0, 0, err
	}
	inUse, err := c.th.CoverPathsInUse(ctx, paths, ids)
	if err != nil {
		return 0, 0, protocol.Wrap(protocol.ErrIOError, err)
	}
	done := map[string]bool{}
	for _, p := range paths {
		if inUse[p] || done[p] {
			continue
		}
		done[p] = true
		removed, err := c.cache.remove(p)
		if protocol.CodeOf(err, "") == protocol.ErrPathViolation {
			// A row pointing outside the cache (hand-written SQL): its
			// row goes, the file it names is never touched.
			continue
		}
		if err != nil {
			return files, 0, err
		}
		if removed {
			files++
		}
	}
	deleted, err = c.th.DeleteCleanedThumbnails(ctx, lease, ids)
	if errors.Is(err, store.ErrNotOwner) {
		return files, 0, err
	}
	if err != nil {
		return files, 0, protocol.Wrap(protocol.ErrIOError, err)
	}
	return files, deleted, nil
}
