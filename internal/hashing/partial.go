package hashing

import (
	"context"
	"os"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/bindery-nas/bindery/internal/store"
)

// partials computes the partial digests that decide which due files are
// duplicate candidates (store.PartialTargets): the first and last
// store.PartialBlock bytes of every same-size file that lacks one. They are
// 128 KiB reads, so hash.io_depth of them are in flight at once, as for
// small files. A file that cannot be read, or no longer matches its row,
// keeps an unknown partial digest: its twins are then read whole, which is
// slower but never misses a group.
func (r *run) partials(ctx context.Context) error {
	var last int64
	for {
		targets, err := r.e.st.PartialTargets(ctx, r.job.LibraryID, r.alg, last, r.e.cfg.BatchSize)
		if err != nil || len(targets) == 0 {
			return err
		}
		results := r.readPartials(ctx, targets)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.e.cfg.FlushTimeout)
		stored, err := r.e.st.RecordPartialHashes(wctx, results)
		cancel()
		r.counts.Partials += stored
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		last = targets[len(targets)-1].ID
	}
}

// readPartials digests targets on up to hash.io_depth goroutines and
// returns the digests of the files read completely and unchanged.
func (r *run) readPartials(ctx context.Context, targets []store.HashCandidate) []store.PartialResult {
	next := make(chan store.HashCandidate)
	var mu sync.Mutex
	var out []store.PartialResult
	var wg sync.WaitGroup
	for range min(r.ioDepth, len(targets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2*store.PartialBlock)
			for c := range next {
				if sum, ok := r.partialOf(ctx, c, buf); ok {
					mu.Lock()
					out = append(out, store.PartialResult{ID: c.ID, Sum: sum, SizeBytes: c.SizeBytes, MtimeNs: c.MtimeNs})
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

// partialOf reads c's first and last PartialBlock bytes into buf and
// digests them; ok is false when the file is unavailable, unreadable, or
// not the version its row describes, before or after the read.
func (r *run) partialOf(ctx context.Context, c store.HashCandidate, buf []byte) (sum []byte, ok bool) {
	root := r.roots[c.LibraryID]
	if root == nil || ctx.Err() != nil {
		return nil, false
	}
	f, fi, err := root.open(c.RelativePath)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if !sameVersion(fi, c) || fi.Size() <= int64(len(buf)) {
		return nil, false
	}
	if take := r.budget.take(ctx); take != nil && take(int64(len(buf))) != nil {
		return nil, false
	}
	half := len(buf) / 2
	if _, err := f.ReadAt(buf[:half], 0); err != nil {
		return nil, false
	}
	if _, err := f.ReadAt(buf[half:], fi.Size()-int64(half)); err != nil {
		return nil, false
	}
	after, err := f.Stat()
	if err != nil || !sameVersion(after, c) {
		return nil, false
	}
	d := blake3.Sum256(buf)
	return d[:], true
}

// sameVersion reports that fi is the version of the file c's row records.
func sameVersion(fi os.FileInfo, c store.HashCandidate) bool {
	return fi.Size() == c.SizeBytes && fi.ModTime().UnixNano() == c.MtimeNs
}
