package scan

import (
	"context"
	"path/filepath"

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
	st, sum, err := identity(ctx, abs, c, alg)
	if err != nil || st.SizeBytes != c.SizeBytes || st.MtimeNS != c.MtimeNS {
		// Changed since discovery (the next scan sees it again), gone, or
		// unreadable (analysis records the error on the file).
		return ctx.Err()
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
	if matches[0].MissingSince.Valid && matches[0].MissingSince.Equal(r.session.StartedAt.Time) {
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

// identity stats and hashes the candidate at abs as discovery and the hash
// job do: a multi-volume RAR book by all its volumes, in order.
func identity(ctx context.Context, abs string, c store.MoveCandidate, alg protocol.HashAlgorithm) (store.FileStat, []byte, error) {
	st, err := statFile(abs, c.RelativePath, c.Role)
	if err != nil {
		return st, nil, err
	}
	if c.Volumes >= 2 {
		sum, size, mtime, err := hashing.Volumes(ctx, filepath.Dir(abs), filepath.Base(abs), alg)
		st.SizeBytes, st.MtimeNS, st.Volumes = size, mtime, c.Volumes
		return st, sum, err
	}
	if st.SizeBytes != c.SizeBytes || st.MtimeNS != c.MtimeNS {
		return st, nil, nil // changed since discovery: not worth a read
	}
	sum, err := hashing.File(ctx, abs, alg)
	return st, sum, err
}
