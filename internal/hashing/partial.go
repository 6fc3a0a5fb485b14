package hashing

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/bindery-nas/bindery/internal/pipeline"
	"github.com/bindery-nas/bindery/internal/store/hashes"
)

// partials computes the partial digests that decide which due files are
// duplicate candidates (store.PartialTargets) for every same-size file
// that lacks one. They are reads of 4 to 128 KiB, so hash.io_depth of them
// are in flight at once, as for small files. A file that cannot be read,
// or no longer matches its row, keeps an unknown partial digest: its twins
// are then read whole, which is slower but never misses a group.
func (r *run) partials(ctx context.Context) error {
	defer func() { r.counts.Partials = r.partialsStored.Load() }() // every return has settled the commits
	var commits pipeline.Behind
	settle := func() error { _, err := commits.Wait(); return err }
	pages := pipeline.WalkAhead(candidateID, func(afterID int64) ([]hashes.HashCandidate, error) {
		return r.e.hs.PartialTargets(ctx, r.job.LibraryID, r.alg, afterID, r.e.cfg.BatchSize)
	})
	defer pages.Stop()
	for {
		targets, err := pages.Next()
		if err != nil || len(targets) == 0 {
			return errors.Join(err, settle())
		}
		results := r.readPartials(ctx, targets)
		if err := settle(); err != nil {
			return err
		}
		// The digests are committed while the next batch is read.
		commits.Start(func() error {
			wctx, cancel, err := r.flushContext(ctx)
			if err != nil {
				return err
			}
			defer cancel()
			stored, err := r.e.hs.RecordPartialHashes(wctx, r.fence, results)
			r.partialsStored.Add(stored)
			return err
		})
		if err := ctx.Err(); err != nil {
			return errors.Join(err, settle())
		}
	}
}

// readPartials digests targets on up to hash.io_depth goroutines and
// returns the digests of the files read completely and unchanged.
func (r *run) readPartials(ctx context.Context, targets []hashes.HashCandidate) []hashes.PartialResult {
	next := make(chan hashes.HashCandidate)
	var mu sync.Mutex
	var out []hashes.PartialResult
	var wg sync.WaitGroup
	for range min(r.ioDepth, len(targets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2*hashes.PartialBlock)
			for c := range next {
				if sum, ok := r.partialOf(ctx, c, buf); ok {
					mu.Lock()
					out = append(out, hashes.PartialResult{ID: c.ID, Sum: sum, SizeBytes: c.SizeBytes, MtimeNS: c.MtimeNS})
					mu.Unlock()
				}
			}
		}()
	}
	for _, c := range targets {
		if ctx.Err() != nil {
			break
		}
		next <- c
	}
	close(next)
	wg.Wait()
	return out
}

// partialOf reads the span of c that its size calls for (hashes.HeadBlock
// or both ends' hashes.PartialBlock) into buf and digests it; ok is false
// when the file is unavailable, unreadable, or not the version its row
// describes, before or after the read.
func (r *run) partialOf(ctx context.Context, c hashes.HashCandidate, buf []byte) (sum []byte, ok bool) {
	root := r.roots[c.LibraryID]
	if root == nil || ctx.Err() != nil || c.Volumes >= 2 { // a volume set is read whole
		return nil, false
	}
	f, fi, err := root.openOwned(c.RelativePath)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if !sameVersion(fi, c) || fi.Size() <= hashes.NoPartialMax {
		return nil, false
	}
	if fi.Size() <= 2*hashes.PartialBlock {
		buf = buf[:hashes.HeadBlock]
	}
	if take := r.budget.take(ctx); take != nil && take(int64(len(buf))) != nil {
		return nil, false
	}
	if err := readEnds(f, fi.Size(), buf); err != nil {
		return nil, false
	}
	after, err := f.Stat()
	if err != nil || !sameVersion(after, c) {
		return nil, false
	}
	return sumBLAKE3(buf), true
}

// readEnds fills buf with the file's first bytes, or, when buf holds two
// hashes.PartialBlock, its first and its last PartialBlock bytes.
func readEnds(f file, size int64, buf []byte) error {
	if len(buf) < 2*hashes.PartialBlock {
		_, err := f.ReadAt(buf, 0)
		return err
	}
	half := len(buf) / 2
	if _, err := f.ReadAt(buf[:half], 0); err != nil {
		return err
	}
	_, err := f.ReadAt(buf[half:], size-int64(half))
	return err
}

// sameVersion reports that fi is the version of the file c's row records.
func sameVersion(fi os.FileInfo, c hashes.HashCandidate) bool {
	return fi.Size() == c.SizeBytes && fi.ModTime().UnixNano() == c.MtimeNS
}
