package trash

import (
	"context"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/protocol"
)

// batchCopies bounds the copies verified, and held open, before they move:
// their intents are one transaction, their outcomes another, and their
// folders are synced once.
const batchCopies = 64

// syncEach is the most folders a batch fsyncs one by one; past it, one
// syncfs of the library's file system is cheaper.
const syncEach = 8

// pending is a group of a batch: its keeper, as its hash saw it, and its
// copies on their way.
type pending struct {
	keeper model.PlanFile
	kid    ident
	cands  []candidate
	moved  []staged
	out    []model.DeleteResult
}

// candidate is a copy verified and held open until it moves.
type candidate struct {
	f  model.PlanFile
	h  *os.File
	id ident
}

// removals carries out a trash or unlink plan in batches of whole groups:
// the plan lists each group's keeper before its copies.
func (r *run) removals(ctx context.Context, progress func(int)) error {
	var batch [][]model.PlanFile
	n := 0
	flush := func() error {
		err := r.batch(ctx, batch)
		for _, g := range batch {
			progress(len(g) - 1)
		}
		batch, n = batch[:0], 0
		return err
	}
	for start := 0; start < len(r.files); {
		end := start + 1
		for end < len(r.files) && r.files[end].GroupSeq == r.files[start].GroupSeq {
			end++
		}
		g := r.files[start:end]
		start = end
		if g[0].Decision != protocol.DecisionKeep {
			return protocol.Errorf(protocol.ErrInvalidPayload, "plan %d lists group %d without its keeper first", r.plan.ID, g[0].GroupSeq)
		}
		batch = append(batch, g)
		if n += len(g) - 1; n >= batchCopies {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return flush()
}

// batch removes the copies of some groups that no earlier run settled:
// each verified from an open file (keepers hashed once per group), their
// intents recorded together, each moved after its keeper is checked
// again, each group settled after one more keeper check, the folders
// synced, and every outcome recorded in one transaction. A stop (cancel,
// lost lease, a library no longer allowing it) still settles and records
// what moved.
func (r *run) batch(ctx context.Context, groups [][]model.PlanFile) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ps := make([]*pending, 0, len(groups))
	defer func() {
		for _, p := range ps {
			for _, c := range p.cands {
				closeFile(c.h)
			}
		}
	}()
	var intents []duplicates.DeleteIntent
	for _, g := range groups {
		p, err := r.verifyGroup(ctx, g[0], g[1:])
		ps = append(ps, p) // its open copies are closed on the way out
		if err != nil {
			return err
		}
		for _, c := range p.cands {
			intents = append(intents, duplicates.DeleteIntent{FileID: c.f.FileID, TrashPath: trashPath(r.job.ID, c.f)})
		}
	}
	// From here the copy in hand, and what moved, are finished even if the
	// job is being cancelled (a cancel stops the moves between copies); a
	// lost lease still stops them at the fence.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var stop error
	if len(intents) > 0 {
		if stop = r.x.dp.RecordDeleteIntents(wctx, r.job, intents); stop == nil {
			stop = r.moveAll(ctx, wctx, ps)
		}
	}
	var out []model.DeleteResult
	dirs := map[int64][]string{}
	for _, p := range ps {
		out = append(out, p.out...)
		out = append(out, r.settle(wctx, p.keeper, p.kid, p.moved)...)
		for _, s := range p.moved {
			dirs[s.f.LibraryID] = append(dirs[s.f.LibraryID], path.Dir(s.f.RelativePath), path.Dir(s.trashRel))
		}
	}
	r.syncBatch(dirs, out)
	if err := r.record(ctx, out...); err != nil {
		return err
	}
	return stop
}

// verifyGroup hashes a group's keeper and the copies no earlier run
// settled, and keeps the copies that may go open.
func (r *run) verifyGroup(ctx context.Context, keeper model.PlanFile, copies []model.PlanFile) (*pending, error) {
	p := &pending{keeper: keeper}
	var todo []model.PlanFile
	for _, f := range copies {
		if !r.done[f.FileID] {
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 {
		return p, nil
	}
	h, kid, kv := verify(ctx, r.roots[keeper.LibraryID], keeper)
	var kpages []hashes.PageDigest
	if kv == nil {
		kpages, kv = r.keeperPages(ctx, h, kid, keeper)
	}
	closeFile(h)
	if err := ctx.Err(); err != nil {
		return p, err // a read cut short by a cancel says nothing about the file
	}
	p.kid = kid
	if kv != nil {
		for _, f := range todo {
			p.out = append(p.out, result(f, protocol.OutcomeLastCopy, "the keeper "+keeper.RelativePath+" is not as planned ("+kv.message+")", ""))
		}
		return p, nil
	}
	for _, f := range todo {
		h, id, v := verify(ctx, r.roots[f.LibraryID], f)
		switch {
		case ctx.Err() != nil:
			closeFile(h)
			return p, ctx.Err()
		case v != nil && v.outcome == protocol.OutcomeMissing:
			p.out = append(p.out, *r.movedBefore(ctx, f))
		case v != nil:
			p.out = append(p.out, result(f, v.outcome, v.message, ""))
		case id.sameFile(kid):
			closeFile(h)
			p.out = append(p.out, result(f, protocol.OutcomeLastCopy, "the keeper "+keeper.RelativePath+" is this same file", ""))
		default:
			if pv := r.copyPagesHold(ctx, h, id, f, kpages); pv != nil {
				closeFile(h)
				if err := ctx.Err(); err != nil {
					return p, err
				}
				p.out = append(p.out, result(f, pv.outcome, pv.message, ""))
				continue
			}
			p.cands = append(p.cands, candidate{f: f, h: h, id: id})
		}
	}
	return p, nil
}

// moveAll moves the batch's candidates, each after allow_delete is read
// again and its keeper checked again. A cancel (ctx) stops it between
// copies; wctx carries the writes of the copy in hand.
func (r *run) moveAll(ctx, wctx context.Context, ps []*pending) error {
	for _, p := range ps {
		for _, c := range p.cands {
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.x.beforeRemove != nil {
				r.x.beforeRemove(c.f.RelativePath)
			}
			if err := r.gate(wctx, c.f.LibraryID); err != nil {
				return err
			}
			if msg := r.keeperHolds(p.keeper, p.kid); msg != "" {
				p.out = append(p.out, result(c.f, protocol.OutcomeLastCopy, msg, ""))
				continue
			}
			s, res, err := r.move(wctx, r.roots[c.f.LibraryID], c.h, c.id, c.f, trashPath(r.job.ID, c.f))
			if res != nil {
				p.out = append(p.out, *res)
			}
			if s != nil {
				p.moved = append(p.moved, *s)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// syncBatch makes the batch's moves durable before their outcomes are
// recorded: each folder fsynced once, or, past syncEach folders, one
// syncfs of the library's file system. A failure is noted on every outcome.
func (r *run) syncBatch(dirs map[int64][]string, out []model.DeleteResult) {
	for lib, ds := range dirs {
		root := r.roots[lib]
		if r.plan.Action == protocol.ActionUnlink {
			pruneEmpty(root, ds)
		}
		var err error
		if unique(ds) <= syncEach {
			err = syncDirs(root, ds...)
		} else {
			err = syncFS(root)
		}
		if err != nil {
			for i := range out {
				out[i].Message += "; the folder sync failed: " + err.Error()
			}
		}
	}
}

func unique(ds []string) int {
	seen := map[string]bool{}
	for _, d := range ds {
		seen[d] = true
	}
	return len(seen)
}

// syncFS flushes the file system that holds the library.
func syncFS(root *os.Root) error {
	f, err := root.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
