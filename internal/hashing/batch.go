package hashing

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"os"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// outcome is what hashing one candidate produced.
type outcome struct {
	id          int64
	sum         []byte
	size        int64
	mtimeNs     int64
	changed     bool  // size or mtime moved while reading: leave it due
	unavailable bool  // its library root is unusable: leave it untouched
	err         error // per-file failure, recorded with a backoff
}

// hashBatch hashes a batch: the small files on r.workers goroutines, then
// the large ones one at a time with the multi-threaded hasher, so a large
// file gets every core and small files keep the disk queue full. It returns
// the outcomes of the files finished, and ctx.Err() if it was cancelled
// (files interrupted mid-read are not among the outcomes).
func (r *run) hashBatch(ctx context.Context, batch []store.HashCandidate) ([]outcome, error) {
	var small, large []store.HashCandidate
	for _, c := range batch {
		if c.SizeBytes >= r.e.cfg.LargeFileBytes {
			large = append(large, c)
		} else {
			small = append(small, c)
		}
	}
	done := make([]outcome, 0, len(batch))
	var mu sync.Mutex
	jobs := make(chan store.HashCandidate)
	var wg sync.WaitGroup
	for range min(r.workers, max(len(small), 1)) {
		wg.Go(func() {
			for c := range jobs {
				if o, ok := r.hashOne(ctx, c, false); ok {
					mu.Lock()
					done = append(done, o)
					mu.Unlock()
				}
			}
		})
	}
feed:
	for _, c := range small {
		select {
		case jobs <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	for _, c := range large {
		if ctx.Err() != nil {
			break
		}
		if o, ok := r.hashOne(ctx, c, true); ok {
			done = append(done, o)
		}
	}
	return done, ctx.Err()
}

// hashOne hashes one candidate. ok is false when ctx was cancelled before
// the file was finished.
func (r *run) hashOne(ctx context.Context, c store.HashCandidate, parallel bool) (outcome, bool) {
	o := outcome{id: c.ID}
	root := r.roots[c.LibraryID]
	if root == "" {
		o.unavailable = true
		return o, true
	}
	path, err := pathsafe.Resolve(root, c.RelativePath)
	if err != nil {
		o.err = fileError(err)
		return o, true
	}
	sum, before, err := r.readSum(ctx, path, parallel)
	if ctx.Err() != nil {
		return o, false
	}
	if err != nil {
		o.err = fileError(err)
		return o, true
	}
	after, err := os.Stat(path)
	if err != nil {
		o.err = fileError(err)
		return o, true
	}
	if !sameVersion(before, after) {
		o.changed = true
		return o, true
	}
	o.sum, o.size, o.mtimeNs = sum, before.Size(), before.ModTime().UnixNano()
	return o, true
}

// readSum streams the file into a fresh hasher. The returned stat is the
// one taken after opening; the caller compares it with one taken after
// reading. A short or long read also counts as a change.
func (r *run) readSum(ctx context.Context, path string, parallel bool) ([]byte, os.FileInfo, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	h, pool := r.newHasher(parallel), &bufPool
	if parallel {
		pool = &bigBufPool
	}
	n, err := copyHashPool(ctx, h, f, r.budget.take(ctx), pool)
	if err != nil {
		return nil, nil, err
	}
	if n != fi.Size() {
		fi = changedInfo{fi}
	}
	if r.e.afterRead != nil {
		r.e.afterRead(path)
	}
	after, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !sameVersion(fi, after) {
		fi = changedInfo{fi}
	}
	return h.Sum(nil), fi, nil
}

func (r *run) newHasher(parallel bool) hash.Hash {
	if parallel && r.alg == protocol.HashBLAKE3 {
		return newBLAKE3Parallel()
	}
	h, _ := newHash(r.alg) // r.alg was parsed by start
	return h
}

// sameVersion reports whether two stats describe the same file contents as
// far as size and mtime tell.
func sameVersion(a, b os.FileInfo) bool {
	if _, ok := a.(changedInfo); ok {
		return false
	}
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// changedInfo marks a stat known to be stale (the read saw another size).
type changedInfo struct{ os.FileInfo }

// fileError gives a read failure its protocol error code; the file's
// hash_last_error records it as "<code>: <detail>".
func fileError(err error) error {
	code := protocol.ErrIOError
	switch {
	case errors.Is(err, pathsafe.ErrOutside):
		code = protocol.ErrSymlinkEscape
	case errors.Is(err, os.ErrNotExist):
		code = protocol.ErrSourceMissing
	case errors.Is(err, ErrNotRegular):
		code = protocol.ErrPathViolation
	}
	return protocol.Wrap(code, err)
}

// resolveLibrary returns the real path of a library, which must exist and
// lie under the configured library root.
func resolveLibrary(libraryRoot, libPath string) (string, error) {
	ok, err := pathsafe.Within(libraryRoot, libPath)
	if err != nil {
		return "", protocol.Errorf(protocol.ErrLibraryMissing, "library %s: %v", libPath, err)
	}
	if !ok {
		return "", protocol.Errorf(protocol.ErrPathViolation, "library %s is not under %s", libPath, libraryRoot)
	}
	return libPath, nil
}

// budget draws read bytes from the shared io_rate_limits bucket. It
// reserves in slices of about 100 ms of budget, so the database sees about
// ten reservations a second per worker process, not one per buffer.
type budget struct {
	st     *store.Store
	bucket string
	rate   int64 // bytes per second
	mu     sync.Mutex
	credit int64
}

// take returns the hook copyHash calls before hashing n bytes; nil (no
// limit) when b is nil.
func (b *budget) take(ctx context.Context) func(n int64) error {
	if b == nil {
		return nil
	}
	return func(n int64) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		for b.credit < n {
			slice := max(n, b.rate/10)
			wait, err := b.st.ReserveIO(ctx, b.bucket, slice, b.rate)
			if err != nil {
				return fmt.Errorf("io budget: %w", err)
			}
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			b.credit += slice
		}
		b.credit -= n
		return nil
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
