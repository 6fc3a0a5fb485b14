package scan

import (
	"context"
	"errors"
	"io/fs"

	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// detectMoves is phase 2 (scan.hash.mode=full): a new row whose size equals
// the size of a missing row of the library is hashed at once. When exactly
// one missing row has the same content hash (same algorithm, hash still
// valid for its signature), that row takes the new path, keeping its id,
// series, metadata and cover, and the new row is dropped. With two or more
// matches nothing is merged: the file stays a new file. Either way the hash
// is kept, so the hash job does not read the file again.
//
// It runs before analysis, so the row it drops was never analysed and no
// cover was ever admitted for it. A candidate is recognised by its state
// (present, never analysed), not by memory, so a killed scan resumes it.
func (r *run) detectMoves(ctx context.Context) error {
	alg := protocol.HashAlgorithm(r.vals.Enum(settings.HashAlgorithm))
	var after int64
	for {
		cands, err := r.st.MoveCandidates(ctx, r.libID, after, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		if len(cands) == 0 {
			return nil
		}
		after = cands[len(cands)-1].ID
		for _, c := range cands {
			if err := r.tryMove(ctx, alg, c); err != nil {
				return err
			}
		}
	}
}

func (r *run) tryMove(ctx context.Context, alg protocol.HashAlgorithm, c store.MoveCandidate) error {
	abs, err := pathsafe.Resolve(r.root, c.RelativePath)
	if err != nil {
		return nil // gone or unsafe now; analysis records what is wrong
	}
	st, err := statFile(abs, c.RelativePath, c.Role)
	if err != nil || st.SizeBytes != c.SizeBytes || st.MtimeNS != c.MtimeNS {
		return nil // changed since discovery; the next scan sees it again
	}
	sum, err := hashing.File(ctx, abs, alg)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return nil // unreadable: analysis records the error on the file
	}
	h := store.FileHash{Algorithm: string(alg), Sum: sum, SizeBytes: st.SizeBytes, MtimeNS: st.MtimeNS}
	matches, err := r.st.MissingWithHash(ctx, r.libID, st.SizeBytes, string(alg), sum)
	if err != nil {
		return err
	}
	if len(matches) != 1 {
		return r.st.RecordHash(ctx, c.ID, h)
	}
	counts := r.counts
	counts.Moved++
	if c.LastSeenScanID.Valid && c.LastSeenScanID.Int64 == r.session.ID {
		counts.Added--
	}
	if matches[0].MissingSince.String == r.session.StartedAt {
		counts.Missing--
	}
	ok, err := r.st.ApplyMove(ctx, store.Move{SessionID: r.session.ID, NewID: c.ID, OldID: matches[0].ID,
		Stat: st, Hash: h, Counts: counts})
	if err != nil {
		return err
	}
	if ok {
		r.counts = counts
	}
	return nil
}
