package hashing

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/bindery-nas/bindery/internal/store/hashes"
)

// Strategy: a small file costs one disk request, and a reader that waits
// for each request before asking for the next (sha256sum, or a hash worker
// that reads its own file) leaves an SSD, a RAID array or a virtual disk
// nearly idle: on this project's test VM one outstanding read gets about
// 5,000 small files/s from a cold disk and sixteen get 15,000. So small
// files are read ahead by ioDepth readers, independently of the hash
// workers (scan.max_workers), which only ever see bytes already in memory.
// Files up to bufSize are read whole into one of the run's buffers; larger
// ones are opened by the reader and streamed by the hash worker.
//
// The buffers are the run's own (bufList), not a sync.Pool: a pool is
// emptied by every garbage collection, and re-allocating (zeroing,
// faulting in) megabytes of buffers many times a second cost more than the
// hashing on a virtual machine.

// readAhead is a small file opened (and, when it fits, read) by a reader.
type readAhead struct {
	f       file        // open file to stream; nil when read whole or decided
	fi      os.FileInfo // stat when opened
	buf     []byte      // whole contents, from the run's bufList; nil otherwise
	n       int
	decided bool    // o is final: the file needs no hashing
	o       outcome // when decided
	skipped bool    // ctx was cancelled before the file was read
	bufs    *bufList
}

// hashSmall hashes the small files of a batch: ioDepth readers feed
// r.workers hash workers. Files already read when ctx is cancelled are
// still hashed (it takes microseconds and the read is the expensive part);
// files not yet read, or interrupted mid-stream, have no outcome.
func (r *run) hashSmall(ctx context.Context, small []hashes.HashCandidate, add func(outcome)) {
	if len(small) == 0 {
		return
	}
	reads := make(chan hashes.HashCandidate)
	ready := make(chan *readAhead, r.workers)
	var readers, hashers sync.WaitGroup
	for range min(r.ioDepth, len(small)) {
		readers.Go(func() {
			for c := range reads {
				ready <- r.readSmall(ctx, c)
			}
		})
	}
	for range min(r.workers, len(small)) {
		hashers.Go(func() {
			for ra := range ready {
				if o, ok := r.finishSmall(ctx, ra); ok {
					add(o)
				}
			}
		})
	}
feed:
	for _, c := range small {
		select {
		case reads <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(reads)
	readers.Wait()
	close(ready)
	hashers.Wait()
}

// readSmall opens c and reads it whole when it fits a buffer.
func (r *run) readSmall(ctx context.Context, c hashes.HashCandidate) *readAhead {
	ra := &readAhead{o: outcome{id: c.ID}}
	if ctx.Err() != nil {
		ra.skipped = true
		return ra
	}
	root := r.roots[c.LibraryID]
	if root == nil {
		ra.decided, ra.o.unavailable = true, true
		return ra
	}
	f, fi, err := root.openOwned(c.RelativePath)
	if err != nil {
		ra.decided, ra.o.err = true, fileError(err)
		return ra
	}
	if fi.Size() >= bufSize {
		ra.f, ra.fi = f, fi
		return ra
	}
	defer f.Close()
	ra.buf, ra.bufs = r.bufs.get(fi.Size()), r.bufs
	n, err := readWhole(f, ra.buf, fi.Size(), r.budget.take(ctx))
	if err == nil {
		ra.o.changed, err = r.changedSince(f, fi, int64(n))
	}
	if err != nil {
		ra.release()
		ra.decided, ra.o.err = true, fileError(err)
		if ctx.Err() != nil {
			ra.skipped = true // the budget wait was cancelled, not the file
		}
		return ra
	}
	ra.fi, ra.n = fi, n
	return ra
}

// readWhole reads f, of size bytes when opened and smaller than buf, into
// buf; before is the I/O budget hook.
func readWhole(f file, buf []byte, size int64, before func(int64) error) (int, error) {
	if before != nil {
		if err := before(size); err != nil {
			return 0, err
		}
	}
	n, err := io.ReadFull(f, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// finishSmall hashes what readSmall prepared.
func (r *run) finishSmall(ctx context.Context, ra *readAhead) (outcome, bool) {
	switch {
	case ra.skipped:
		return outcome{}, false
	case ra.decided:
		return ra.o, true
	case ra.f != nil:
		return r.streamOne(ctx, ra.o, ra.f, ra.fi, false)
	}
	defer ra.release()
	if !ra.o.changed {
		ra.o.sum, ra.o.size, ra.o.mtimeNs = r.sumBytes(ra.buf[:ra.n]), ra.fi.Size(), ra.fi.ModTime().UnixNano()
	}
	return ra.o, true
}

func (ra *readAhead) release() {
	if ra.buf != nil {
		ra.bufs.put(ra.buf)
		ra.buf = nil
	}
}

// bufList is a run's set of read buffers: at most one per reader, one per
// hash worker and one per slot of the queue between them, so a run never
// holds more than (hash.io_depth + 2 × scan.max_workers) × bufSize. A file
// under smallBufSize takes a buffer of that size from a list of its own:
// a library of small files (sidecars, loose images, the scale benchmark's
// books) keeps its 20 buffers in 1.25 MiB instead of 20 MiB.
type bufList struct {
	free  chan []byte  // bufSize
	small chan []byte  // smallBufSize
	made  atomic.Int64 // buffers allocated, for tests of the bound
}

// smallBufSize is the buffer of a file smaller than it.
const smallBufSize = 64 << 10

func newBufList(n int) *bufList {
	return &bufList{free: make(chan []byte, n), small: make(chan []byte, n)}
}

// get returns a free buffer longer than size (the file's size when
// opened: a file that grew since fills it, and is found changed),
// allocating one when none is free; the list's bound holds because every
// buffer in use belongs to one of the n holders.
func (l *bufList) get(size int64) []byte {
	list, n := l.free, bufSize
	if size < smallBufSize {
		list, n = l.small, smallBufSize
	}
	select {
	case b := <-list:
		return b
	default:
		l.made.Add(1)
		return make([]byte, n)
	}
}

func (l *bufList) put(b []byte) {
	list := l.free
	if len(b) == smallBufSize {
		list = l.small
	}
	select {
	case list <- b:
	default: // more holders than the bound: let it go
	}
}
