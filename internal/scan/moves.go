package scan

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store/scanning"
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
	if r.paths != nil {
		if err := r.vanishedElsewhere(ctx); err != nil {
			return err
		}
	}
	alg := protocol.HashAlgorithm(r.vals.Enum(settings.HashAlgorithm))
	var after int64
	for {
		cands, err := r.sc.MoveCandidates(ctx, r.libID, after, r.cfg.BatchSize)
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

func (r *run) tryMove(ctx context.Context, alg protocol.HashAlgorithm, c scanning.MoveCandidate) error {
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
	h := scanning.FileHash{Algorithm: string(alg), Sum: sum, SizeBytes: st.SizeBytes, MtimeNS: st.MtimeNS}
	matches, err := r.sc.MissingWithHash(ctx, r.libID, st.SizeBytes, string(alg), sum)
	if err != nil {
		return err
	}
	if len(matches) != 1 {
		return r.sc.RecordHash(ctx, r.fence, c.ID, h)
	}
	counts := r.counts
	counts.Moved++
	if c.LastSeenScanID.Valid && c.LastSeenScanID.Int64 == r.session.ID {
		counts.Added--
	}
	if matches[0].MissingSince.Valid && matches[0].MissingSince.Equal(r.session.StartedAt.Time) {
		counts.Missing--
	}
	ok, err := r.sc.ApplyMove(ctx, r.fence, scanning.Move{SessionID: r.session.ID, NewID: c.ID, OldID: matches[0].ID,
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
func identity(ctx context.Context, abs string, c scanning.MoveCandidate, alg protocol.HashAlgorithm) (scanning.FileStat, []byte, error) {
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

// vanishedElsewhere is a folder-scoped scan's part of move detection. A
// file moved into the scope from a folder outside it is new here, while
// its old row still looks present: the scan of its old folder may come
// later (the watcher requests each folder once it settles) or never. So
// the rows outside the scope that have the size of a new row here, and
// whose file is gone from disk, are marked missing now, as the scan of
// their folder would, and the move is recognised in this scan. A row
// whose path cannot be checked (the root unreadable) is left alone.
func (r *run) vanishedElsewhere(ctx context.Context) error {
	gone := map[int64]bool{}
	var after int64
	for {
		rows, err := r.sc.NewRows(ctx, r.libID, after, r.cfg.BatchSize)
		if err != nil || len(rows) == 0 {
			return err
		}
		after = rows[len(rows)-1].ID
		var batch []int64
		for _, n := range rows {
			olds, err := r.sc.PresentWithSize(ctx, r.libID, n.SizeBytes, n.ID)
			if err != nil {
				return err
			}
			for _, o := range olds {
				if gone[o.ID] || r.inScope(o.RelativePath) {
					continue
				}
				if _, err := os.Lstat(filepath.Join(r.root, filepath.FromSlash(o.RelativePath))); errors.Is(err, fs.ErrNotExist) {
					gone[o.ID] = true
					batch = append(batch, o.ID)
				}
			}
		}
		if len(batch) == 0 {
			continue
		}
		r.counts.Missing += int64(len(batch))
		b := scanning.DiscoveryBatch{SessionID: r.session.ID, LibraryID: r.libID, MissingSince: r.session.StartedAt,
			Missing: batch, Counts: r.counts}
		if err := r.sc.ApplyDiscovery(ctx, r.fence, &b); err != nil {
			return err
		}
	}
}

// inScope reports whether rel lies under one of the scan's folders.
func (r *run) inScope(rel string) bool {
	for _, p := range r.paths {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return r.paths == nil
}
