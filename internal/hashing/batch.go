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
	if root == nil {
		o.unavailable = true
		return o, true
	}
	sum, fi, changed, err := r.readSum(ctx, root, c.RelativePath, parallel)
	switch {
	case ctx.Err() != nil:
		return o, false
	case err != nil:
		o.err = fileError(err)
	case changed:
		o.changed = true
	default:
		o.sum, o.size, o.mtimeNs = sum, fi.Size(), fi.ModTime().UnixNano()
	}
	return o, true
}

// readSum streams the file into a fresh hasher. changed reports that the
// file's size or mtime moved while it was read, or that the bytes read were
// not its size: the digest then describes no stable version.
func (r *run) readSum(ctx context.Context, root *libRoot, rel string, parallel bool) (sum []byte, fi os.FileInfo, changed bool, err error) {
	f, fi, err := root.open(rel)
	if err != nil {
		return nil, nil, false, err
	}
	defer f.Close()
	h, pool := r.newHasher(parallel), &bufPool
	if parallel {
		pool = &bigBufPool
	}
	n, err := copyHashPool(ctx, h, f, r.budget.take(ctx), pool)
	if err != nil {
		return nil, nil, false, err
	}
	if r.e.afterRead != nil {
		r.e.afterRead(f.Name())
	}
	after, err := f.Stat()
	if err != nil {
		return nil, nil, false, err
	}
	changed = n != fi.Size() || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime())
	return h.Sum(nil), fi, changed, nil
}

func (r *run) newHasher(parallel bool) hash.Hash {
	if parallel && r.alg == protocol.HashBLAKE3 {
		return newBLAKE3Parallel()
	}
	h, _ := newHash(r.alg) // r.alg was parsed by start
	return h
}

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

// resolveLibrary opens a library folder, which must exist and lie under
// the configured library root.
func resolveLibrary(libraryRoot, libPath string) (*libRoot, error) {
	ok, err := pathsafe.Within(libraryRoot, libPath)
	if err != nil {
		return nil, protocol.Errorf(protocol.ErrLibraryMissing, "library %s: %v", libPath, err)
	}
	if !ok {
		return nil, protocol.Errorf(protocol.ErrPathViolation, "library %s is not under %s", libPath, libraryRoot)
	}
	root, err := openLibRoot(libPath)
	if err != nil {
		return nil, protocol.Wrap(protocol.ErrLibraryMissing, err)
	}
	return root, nil
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
