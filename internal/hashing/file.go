// Package hashing computes content hashes of library files (BLAKE3 or
// SHA-256) at disk speed and runs the hash job that stores them.
//
// Strategy: files are streamed through a pooled 512 KiB buffer, so memory
// stays flat whatever the file size, and the context is checked between
// buffers, so a cancel takes effect within about a millisecond even inside
// a multi-GiB file.
package hashing

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/bindery-nas/bindery/protocol"
)

// bufSize is the largest file the read-ahead readers read whole into one
// of a run's buffers (readahead.go).
const bufSize = 1 << 20

// streamBufSize is the read size of a streamed file hashed on one core: a
// multiple of BLAKE3's 16 KiB groups, large enough that syscall overhead
// vanishes, small enough that the buffer stays in the L2 cache between the
// read's copy and the hash (blake3Hasher hashes it in place), and a cancel
// check runs every 0.1 ms or so. On the VM of issue 40's measurement (AMD
// EPYC, 1 MiB L2 per core) 512 KiB hashed BLAKE3 ~5% faster than 1 MiB,
// 4.48 against 4.27 GB/s (docs/PERFORMANCE-NOTES.md).
const streamBufSize = 512 << 10

// bigBufSize is the read size for large files hashed alone: the parallel
// BLAKE3 splits each write into subtrees across cores, and larger writes
// amortise its goroutine fan-out (measured 3.1 → 3.8 GB/s on 2 cores).
const bigBufSize = 8 << 20

var (
	bufPool    = sync.Pool{New: func() any { b := make([]byte, streamBufSize); return &b }}
	bigBufPool = sync.Pool{New: func() any { b := make([]byte, bigBufSize); return &b }}
)

// File returns the 32-byte digest of the file at path with alg. It reads
// the file in 512 KiB pieces, never holding the whole file in memory, and
// returns ctx.Err() promptly when ctx is cancelled, even mid-file.
func File(ctx context.Context, path string, alg protocol.HashAlgorithm) (sum []byte, err error) {
	h, err := newHash(alg)
	if err != nil {
		return nil, err
	}
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := copyHash(ctx, h, f, nil); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// Reader returns the digest with alg of everything r yields, read as File
// reads: pooled buffers, ctx checked between them.
func Reader(ctx context.Context, r io.Reader, alg protocol.HashAlgorithm) ([]byte, error) {
	h, err := newHash(alg)
	if err != nil {
		return nil, err
	}
	if _, err := copyHash(ctx, h, r, nil); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// ErrNotRegular is returned for a path that is not a regular file (a FIFO,
// a device, a folder): reading it could block forever or mean nothing.
var ErrNotRegular = errors.New("not a regular file")

// file is an open file the hash job reads: an *os.File, or on Linux the
// bare descriptor libRoot opened (fdFile).
type file interface {
	io.Reader
	io.ReaderAt
	Stat() (os.FileInfo, error)
	Close() error
	Name() string
}

// openRegular opens path for reading without blocking on a FIFO and returns
// the open file's stat. O_NONBLOCK has no effect on regular files.
func openRegular(path string) (file, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	return keepRegular(f)
}

// keepRegular returns an opened file with its stat, or closes it and
// refuses it (ErrNotRegular) when it is not a regular file.
func keepRegular(f file) (file, os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%s)", f.Name(), ErrNotRegular, fi.Mode().Type())
	}
	return f, fi, nil
}

// newHash returns a fresh hasher for alg with a 32-byte output.
func newHash(alg protocol.HashAlgorithm) (hash.Hash, error) {
	switch alg {
	case protocol.HashBLAKE3:
		return newBLAKE3(), nil
	case protocol.HashSHA256:
		return newSHA256(), nil
	}
	return nil, fmt.Errorf("hash: unknown algorithm %q", alg)
}

// copyHash streams r into h through a pooled buffer and returns the number
// of bytes read. before, when not nil, is called with each piece's size
// before it is hashed (the I/O budget hook); its error stops the copy.
func copyHash(ctx context.Context, h hash.Hash, r io.Reader, before func(n int64) error) (int64, error) {
	return copyHashPool(ctx, h, r, before, &bufPool)
}

func copyHashPool(ctx context.Context, h hash.Hash, r io.Reader, before func(n int64) error, pool *sync.Pool) (int64, error) {
	bp := pool.Get().(*[]byte)
	defer pool.Put(bp)
	buf := *bp
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if before != nil {
				if berr := before(int64(n)); berr != nil {
					return total, berr
				}
			}
			h.Write(buf[:n])
			total += int64(n)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return total, nil
		default:
			return total, err
		}
	}
}
