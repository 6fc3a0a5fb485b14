package trash

import (
	"context"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// reconcile settles the intents that a run of the job left without an
// outcome (killed between a move and its record, a failed write, a lease
// lost mid-group), from what the disk holds now:
//   - the planned file, by its digest, at its trash path: trashed (an
//     unlink plan's copy too: it stays in the trash, restorable);
//   - another file there: it goes back to its path (changed_since_plan);
//   - one file under both names (a link-then-unlink move cut in two): the
//     trash name goes, and the intent with it;
//   - the file only at its path: it never moved, the intent goes;
//   - neither: unlinked for an unlink plan, else missing.
func (r *run) reconcile(ctx context.Context) error {
	if r.plan.Action != protocol.ActionTrash && r.plan.Action != protocol.ActionUnlink {
		return nil
	}
	intents, err := r.x.dp.DeleteIntents(ctx, r.job.ID)
	if err != nil || len(intents) == 0 {
		return err
	}
	byID := make(map[int64]model.PlanFile, len(r.files))
	for _, f := range r.files {
		byID[f.FileID] = f
	}
	var out []model.DeleteResult
	var drop []int64
	for _, in := range intents {
		f, ok := byID[in.FileID]
		if !ok {
			drop = append(drop, in.FileID)
			continue
		}
		res, settled := r.settleIntent(ctx, f, in.TrashPath)
		switch {
		case res != nil:
			out = append(out, *res)
		case settled:
			drop = append(drop, in.FileID)
		}
	}
	if err := r.record(ctx, out...); err != nil {
		return err
	}
	if len(drop) == 0 {
		return nil
	}
	return r.x.dp.DropDeleteIntents(ctx, r.job, drop)
}

// settleIntent decides one intent: an outcome, or settled with none (the
// intent goes), or neither (left for a later run: a read cut short).
func (r *run) settleIntent(ctx context.Context, f model.PlanFile, trashRel string) (*model.DeleteResult, bool) {
	root := r.roots[f.LibraryID]
	t, inTrash := lstatIdent(root, trashRel)
	p, atPath := lstatIdent(root, f.RelativePath)
	switch {
	case inTrash && atPath && t.sameFile(p):
		if err := root.Remove(trashRel); err != nil {
			return nil, false
		}
		return nil, true
	case inTrash:
		inTrashCopy := f
		inTrashCopy.RelativePath = trashRel
		h, _, v := verify(ctx, root, inTrashCopy)
		closeFile(h)
		switch {
		case ctx.Err() != nil:
			return nil, false
		case v == nil:
			return ptr(result(f, protocol.OutcomeTrashed, "settled after an interrupted run", trashRel)), true
		case v.outcome == protocol.OutcomeChanged:
			return ptr(r.putBack(ctx, root, f, trashRel, protocol.OutcomeChanged, "the file moved to the trash is not the planned one")), true
		}
		return ptr(result(f, v.outcome, v.message, trashRel)), true
	case atPath:
		return nil, true
	case r.plan.Action == protocol.ActionUnlink:
		return ptr(result(f, protocol.OutcomeUnlinked, "settled after an interrupted run", "")), true
	}
	return ptr(result(f, protocol.OutcomeMissing, "gone from its path and from the trash", "")), true
}
