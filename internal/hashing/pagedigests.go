package hashing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/pipeline"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store/hashes"
)

// maxPageBytes is the largest page the digest phase decompresses.
const maxPageBytes = 256 << 20

// pageDigestBatch is the most books whose digests are written per
// transaction.
const pageDigestBatch = 64

// pageDigests is the hash job's last phase (issue 38): the candidate
// books of every library (pagesig.Candidates: another book has the same
// pages by the archives' indexes, or the same but for a few pages at the
// start or end) have every page decompressed and digested with BLAKE3,
// and the digests are written under the job's fence. Other books are
// never decompressed. A book that cannot be read is counted and left
// without digests; it stays a candidate for the next job.
//
// Books are digested pageDigestBatch at a time by scan.max_workers
// goroutines (a book's pages are decompressed one after another, so one
// goroutine left a core idle beside an LZMA or RAR decoder), and each
// batch's digests are written behind the next batch's reads.
//
// The phase's books join the job's progress (processed of total), after
// the files of the hash passes. On cancel or a yield the books already
// digested are still written, as the hash passes' batches are
// (flushContext), and ctx's error is returned.
func (r *run) pageDigests(ctx context.Context) error {
	vals, err := settings.Load(ctx, r.e.st)
	if err != nil {
		return fmt.Errorf("page digests: %w", err)
	}
	// The candidates' ids (8 bytes a book), then their rows a chunk at a
	// time: a library where most books are candidates holds one chunk of
	// paths, not all of them. A candidate already digested counts as
	// processed when its chunk is read.
	ids, err := r.e.hs.PageDigestCandidates(ctx, int(vals.Int(settings.SameBookContainsPages)))
	if err != nil {
		return err
	}
	r.total = max(r.total, r.processed) + int64(len(ids))
	r.rep.Progress(r.processed, r.total)
	var writes pipeline.Behind
	settle := func() error { _, err := writes.Wait(); return err }
	defer func() { r.counts.PageDigested = r.pageDigested.Load() }() // every return has settled the writes
	for chunk := range slices.Chunk(ids, hashes.PageDigestTargetChunk) {
		if err := ctx.Err(); err != nil {
			return errors.Join(err, settle())
		}
		targets, err := r.e.hs.PageDigestTargetRows(ctx, chunk)
		if err != nil {
			return errors.Join(err, settle())
		}
		r.processed += int64(len(chunk) - len(targets))
		for batch := range slices.Chunk(targets, pageDigestBatch) {
			books := r.digestAll(ctx, batch)
			if err := settle(); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return errors.Join(err, r.storePageDigests(ctx, books))
			}
			writes.Start(func() error { return r.storePageDigests(ctx, books) })
		}
	}
	return settle()
}

// digestAll digests targets with r.workers goroutines and returns, in
// the targets' order, the books that could be read; the others are
// counted. Each book joins the job's progress in order as it is done;
// past a cancel the books after the last one counted are dropped (a
// worker finishes the book it holds, then stops) and stay due.
func (r *run) digestAll(ctx context.Context, targets []hashes.PageDigestTarget) []hashes.BookPageDigests {
	type digested struct {
		book hashes.BookPageDigests
		err  error
	}
	ready := make([]chan digested, len(targets))
	for i := range ready {
		ready[i] = make(chan digested, 1)
	}
	next, stop := make(chan int), make(chan struct{})
	var wg sync.WaitGroup
	for range min(r.workers, len(targets)) {
		wg.Go(func() {
			for i := range next {
				b, err := r.digestTarget(ctx, targets[i])
				ready[i] <- digested{b, err}
			}
		})
	}
	go func() {
		defer close(next)
		for i := range targets {
			select {
			case next <- i:
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	var books []hashes.BookPageDigests
	for i := range targets {
		d := <-ready[i]
		switch {
		case d.err == nil:
			books = append(books, d.book)
		case errors.Is(d.err, errRootUnusable):
			r.counts.Unavailable++
		default:
			r.counts.PageDigestFailed++
		}
		r.processed++
		r.rep.Progress(r.processed, r.total)
		if ctx.Err() != nil {
			break
		}
	}
	return books
}

// errRootUnusable: the book's library root could not be opened.
var errRootUnusable = errors.New("library root unusable")

// digestTarget digests one candidate book; a book that could not be read
// is left for the next job.
func (r *run) digestTarget(ctx context.Context, t hashes.PageDigestTarget) (hashes.BookPageDigests, error) {
	root := r.roots[t.LibraryID]
	if root == nil {
		return hashes.BookPageDigests{}, errRootUnusable
	}
	return digestBook(root, t, r.budget.take(ctx))
}

func (r *run) storePageDigests(ctx context.Context, batch []hashes.BookPageDigests) error {
	if len(batch) == 0 {
		return nil
	}
	wctx, cancel, err := r.flushContext(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	n, err := r.e.hs.RecordPageDigests(wctx, r.fence, batch)
	r.pageDigested.Add(n)
	return err
}

// digestBook reads every page of t's archive, confined to its library,
// and digests it; the file must still be the version the row describes.
// Every read draws from the I/O budget first (take; nil for none), as the
// hash reads do, so io.hash_rate_limit_mb_s bounds this phase too.
func digestBook(root *libRoot, t hashes.PageDigestTarget, take func(n int64) error) (hashes.BookPageDigests, error) {
	f, fi, err := root.open(t.RelativePath)
	if err != nil {
		return hashes.BookPageDigests{}, err
	}
	defer f.Close()
	if fi.Size() != t.SizeBytes || fi.ModTime().UnixNano() != t.MtimeNS {
		return hashes.BookPageDigests{}, fmt.Errorf("%s changed since it was scanned", t.RelativePath)
	}
	pages, err := PageDigests(budgeted(f, take), fi.Size(), fi.Name())
	if err != nil {
		return hashes.BookPageDigests{}, fmt.Errorf("%s: %w", t.RelativePath, err)
	}
	return hashes.BookPageDigests{FileID: t.ID, SizeBytes: t.SizeBytes, MtimeNS: t.MtimeNS, Pages: pages}, nil
}

// PageDigests decompresses every page of the archive in r (size bytes,
// named name) and digests it with BLAKE3, in page order (the archive's
// images in natural order; archive.Archive.Pages leaves out ComicInfo.xml,
// Thumbs.db and every other non-page entry). It is the one definition of
// a book's page digests: the hash job stores them, and a same_pages delete
// job (internal/trash) reads both books again with it before a copy goes.
func PageDigests(r io.ReaderAt, size int64, name string) ([]hashes.PageDigest, error) {
	a, err := archive.OpenReaderAt(r, size, name)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	out := make([]hashes.PageDigest, 0, len(a.Pages()))
	for _, e := range a.Pages() {
		data, err := a.ReadEntry(e, maxPageBytes)
		if err != nil {
			return nil, err
		}
		out = append(out, hashes.PageDigest{Size: int64(len(data)), Digest: sumBLAKE3(data)})
	}
	return out, nil
}

// budgeted is r with every read drawn from the I/O budget first; r itself
// when take is nil (no limit).
func budgeted(r io.ReaderAt, take func(n int64) error) io.ReaderAt {
	if take == nil {
		return r
	}
	return budgetedReaderAt{r, take}
}

type budgetedReaderAt struct {
	r    io.ReaderAt
	take func(n int64) error
}

func (b budgetedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := b.take(int64(len(p))); err != nil {
		return 0, err
	}
	return b.r.ReadAt(p, off)
}
