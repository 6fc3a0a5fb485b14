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
	"github.com/bindery-nas/bindery/internal/store/hashes"
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

// hashBatch hashes a batch: the small files read ahead and hashed on
// r.workers goroutines (hashSmall), then the large ones one at a time with
// the multi-threaded hasher, so a large file gets every core. It returns
// the outcomes of the files finished, and ctx.Err() if it was cancelled
// (files not read, or interrupted mid-read, are not among the outcomes).
func (r *run) hashBatch(ctx context.Context, batch []hashes.HashCandidate) ([]outcome, error) {
	var small, large []hashes.HashCandidate
	for _, c := range batch {
		if c.SizeBytes >= r.e.cfg.LargeFileBytes || c.Volumes >= 2 {
			large = append(large, c)
		} else {
			small = append(small, c)
		}
	}
	done := make([]outcome, 0, len(batch))
	var mu sync.Mutex
	r.hashSmall(ctx, small, func(o outcome) {
		mu.Lock()
		done = append(done, o)
		mu.Unlock()
	})
	for _, c := range large {
		if ctx.Err() != nil {
			break
		}
		if o, ok := r.hashLarge(ctx, c); ok {
			done = append(done, o)
		}
	}
	return done, ctx.Err()
}

// hashLarge hashes one large candidate with the multi-threaded hasher. ok
// is false when ctx was cancelled before the file was finished.
func (r *run) hashLarge(ctx context.Context, c hashes.HashCandidate) (outcome, bool) {
	o := outcome{id: c.ID}
	root := r.roots[c.LibraryID]
	if root == nil {
		o.unavailable = true
		return o, true
	}
	if c.Volumes >= 2 {
		return r.hashVolumes(ctx, o, root, c.RelativePath)
	}
	f, fi, err := root.open(c.RelativePath)
	if err != nil {
		o.err = fileError(err)
		return o, true
	}
	return r.streamOne(ctx, o, f, fi, true)
}

// streamOne streams the open file f, whose stat when opened was fi, into a
// fresh hasher and closes it. ok is false when ctx was cancelled first.
func (r *run) streamOne(ctx context.Context, o outcome, f file, fi os.FileInfo, parallel bool) (outcome, bool) {
	defer f.Close()
	h, pool := r.newHasher(parallel), &bufPool
	if parallel {
		pool = &bigBufPool
	}
	n, err := copyHashPool(ctx, h, f, r.budget.take(ctx), pool)
	if err == nil {
		o.changed, err = r.changedSince(f, fi, n)
	}
	switch {
	case ctx.Err() != nil:
		return o, false
	case err != nil:
		o.err = fileError(err)
	case !o.changed:
		o.sum, o.size, o.mtimeNs = h.Sum(nil), fi.Size(), fi.ModTime().UnixNano()
	}
	return o, true
}

// changedSince reports that f, of stat fi when opened and read to its end
// in n bytes, changed while it was read: its size or mtime moved, or the
// bytes read were not its size. Its digest then describes no stable
// version.
func (r *run) changedSince(f file, fi os.FileInfo, n int64) (bool, error) {
	if r.e.afterRead != nil {
		r.e.afterRead(f.Name())
	}
	return changedSince(f, fi, n)
}

func changedSince(f file, fi os.FileInfo, n int64) (bool, error) {
	after, err := f.Stat()
	if err != nil {
		return false, err
	}
	return n != fi.Size() || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()), nil
}

func (r *run) newHasher(parallel bool) hash.Hash {
	if parallel && r.alg == protocol.HashBLAKE3 {
		return newBLAKE3Parallel()
	}
	h, _ := newHash(r.alg) // r.alg was parsed by start
	return h
}

// sumBytes returns the digest of b with the run's algorithm; BLAKE3's
// hasher (16 KiB of buffer) then lives on the stack, not the heap.
func (r *run) sumBytes(b []byte) []byte {
	if r.alg == protocol.HashBLAKE3 {
		return sumBLAKE3(b)
	}
	h := r.newHasher(false)
	h.Write(b)
	return h.Sum(nil)
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
func resolveLibrary(roots pathsafe.Roots, libPath string) (*libRoot, error) {
	ok, err := roots.Contains(libPath)
	if err != nil {
		return nil, protocol.Errorf(protocol.ErrLibraryMissing, "library %s: %v", libPath, err)
	}
	if !ok {
		return nil, protocol.Errorf(protocol.ErrPathViolation, "library %s is not under %s", libPath, roots)
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
