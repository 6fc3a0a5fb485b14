package hashing

import (
	"context"
	"fmt"
	"os"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
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
func (r *run) pageDigests(ctx context.Context) error {
	vals, err := settings.Load(ctx, r.e.st)
	if err != nil {
		return fmt.Errorf("page digests: %w", err)
	}
	targets, err := r.e.st.PageDigestTargets(ctx, int(vals.Int(settings.SameBookContainsPages)))
	if err != nil {
		return err
	}
	var batch []store.BookPageDigests
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		root := r.roots[t.LibraryID]
		if root == nil {
			r.counts.Unavailable++
			continue
		}
		b, err := digestBook(root, t)
		if err != nil {
			r.counts.PageDigestFailed++
			continue
		}
		if batch = append(batch, b); len(batch) == pageDigestBatch {
			if err := r.storePageDigests(ctx, batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	return r.storePageDigests(ctx, batch)
}

func (r *run) storePageDigests(ctx context.Context, batch []store.BookPageDigests) error {
	if len(batch) == 0 {
		return nil
	}
	n, err := r.e.st.RecordPageDigests(ctx, r.fence, batch)
	r.counts.PageDigested += n
	return err
}

// digestBook reads every page of t's archive, confined to its library,
// and digests it; the file must still be the version the row describes.
func digestBook(root *libRoot, t store.PageDigestTarget) (store.BookPageDigests, error) {
	f, fi, err := root.open(t.RelativePath)
	if err != nil {
		return store.BookPageDigests{}, err
	}
	defer f.Close()
	if fi.Size() != t.SizeBytes || fi.ModTime().UnixNano() != t.MtimeNS {
		return store.BookPageDigests{}, fmt.Errorf("%s changed since it was scanned", t.RelativePath)
	}
	pages, err := digestPages(f, fi)
	if err != nil {
		return store.BookPageDigests{}, fmt.Errorf("%s: %w", t.RelativePath, err)
	}
	return store.BookPageDigests{FileID: t.ID, SizeBytes: t.SizeBytes, MtimeNS: t.MtimeNS, Pages: pages}, nil
}

// digestPages digests the pages of the archive in f, in page order.
func digestPages(f *os.File, fi os.FileInfo) ([]store.PageDigest, error) {
	a, err := archive.OpenReaderAt(f, fi.Size(), fi.Name())
	if err != nil {
		return nil, err
	}
	defer a.Close()
	out := make([]store.PageDigest, 0, len(a.Pages()))
	for _, e := range a.Pages() {
		data, err := a.ReadEntry(e, maxPageBytes)
		if err != nil {
			return nil, err
		}
		h := newBLAKE3()
		h.Write(data)
		out = append(out, store.PageDigest{Size: int64(len(data)), Digest: h.Sum(nil)})
	}
	return out, nil
}
