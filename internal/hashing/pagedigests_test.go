package hashing

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// samebookCorpus writes the generated corpus of issue 38 into e's library
// and signs every book; it returns the file ids by name.
//
//   - book a: stored zip, deflate-9 zip with its entries reversed and a
//     ComicInfo.xml, non-solid 7z, and with a credit page added at the
//     start and at the end;
//   - book d: deflate-1 zip and solid 7z;
//   - book c: two zips of the same size whose middle page differs (same
//     size, other bytes): no candidates;
//   - book e: a zip in the job's library and a solid 7z in another one;
//   - book b: alone.
func samebookCorpus(t *testing.T, e *env) map[string]int64 {
	a, d, b, c := bookPages(1, 6), bookPages(2, 5), bookPages(3, 4), bookPages(4, 7)
	credit := page{name: "000-credits.jpg", data: noise(99, 5*kib)}
	endCredit := page{name: "zzz-credits.jpg", data: credit.data}
	changed := slices.Clone(c)
	changed[3] = page{name: c[3].name, data: noise(77, len(c[3].data))}
	books := map[string][]byte{
		"a.cbz":         zipBook(t, zip.Store, 0, a, false),
		"a-deflate.cbz": zipBook(t, zip.Deflate, 9, reversed(a), true),
		"a.cb7":         sevenZipBook(t, a, false),
		"a-credit.cbz":  zipBook(t, zip.Deflate, 6, append([]page{credit}, a...), false),
		"a-end.cbz":     zipBook(t, zip.Store, 0, append(slices.Clone(a), endCredit), false),
		"d.cbz":         zipBook(t, zip.Deflate, 1, d, false),
		"d.cb7":         sevenZipBook(t, d, true),
		"c.cbz":         zipBook(t, zip.Store, 0, c, false),
		"c-changed.cbz": zipBook(t, zip.Store, 0, changed, false),
		"b.cbz":         zipBook(t, zip.Deflate, 6, b, false),
	}
	ids := map[string]int64{}
	for _, rel := range slices.Sorted(func(yield func(string) bool) {
		for k := range books {
			if !yield(k) {
				return
			}
		}
	}) {
		ids[rel] = e.addFile(t, rel, books[rel])
		e.sign(t, ids[rel], filepath.Join(e.lib, rel))
	}
	ids["e.cbz"] = e.addFile(t, "e.cbz", zipBook(t, zip.Deflate, 6, bookPages(5, 3), false))
	e.sign(t, ids["e.cbz"], filepath.Join(e.lib, "e.cbz"))
	ids["e.cb7"] = e.addOther(t, "e.cb7", sevenZipBook(t, bookPages(5, 3), true))
	e.sign(t, ids["e.cb7"], filepath.Join(e.root, "other", "e.cb7"))
	return ids
}

// TestPageDigestsOfCandidatesOnly runs a hash job of library 1 over the
// corpus: only the candidate books (a's five copies, d's two and e's two,
// one of them in library 2) are decompressed and
// get page digests; their ordered lists are equal whatever the container,
// compression, entry order or ComicInfo.xml, and a credit page is one
// extra digest at the start or the end. Book c's copies, the same size
// with one page changed in the middle, and the lone book b get none. A
// second run reads nothing again; a changed file's digests no longer count.
func TestPageDigestsOfCandidatesOnly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := samebookCorpus(t, e)
	res, _, err := e.run(t, e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res["page_digested"] != 9 || res["page_digest_failed"] != 0 {
		t.Fatalf("result %v, want 9 books digested", res)
	}
	digests := func(rel string) [][]byte {
		t.Helper()
		ps, err := hashes.New(e.control).PageDigests(e.ctx, ids[rel])
		if err != nil {
			t.Fatal(err)
		}
		var out [][]byte
		for _, p := range ps {
			out = append(out, p.Digest)
		}
		return out
	}
	same := func(x, y [][]byte) bool { return slices.EqualFunc(x, y, bytes.Equal) }
	a := digests("a.cbz")
	if len(a) != 6 {
		t.Fatalf("a.cbz has %d page digests, want 6", len(a))
	}
	for _, rel := range []string{"a-deflate.cbz", "a.cb7"} {
		if !same(digests(rel), a) {
			t.Errorf("%s's page digests differ from a.cbz's", rel)
		}
	}
	if got := digests("a-credit.cbz"); len(got) != 7 || !same(got[1:], a) {
		t.Errorf("a-credit.cbz: %d digests, want a.cbz's after one credit page", len(got))
	}
	if got := digests("a-end.cbz"); len(got) != 7 || !same(got[:6], a) || !bytes.Equal(got[6], digests("a-credit.cbz")[0]) {
		t.Errorf("a-end.cbz: %d digests, want a.cbz's then the credit page", len(got))
	}
	if d := digests("d.cbz"); len(d) != 5 || !same(digests("d.cb7"), d) {
		t.Errorf("d.cbz and d.cb7: %d digests, want 5 equal", len(d))
	}
	if d := digests("e.cbz"); len(d) != 3 || !same(digests("e.cb7"), d) {
		t.Errorf("e.cbz and the other library's e.cb7: %d digests, want 3 equal", len(d))
	}
	for _, rel := range []string{"c.cbz", "c-changed.cbz", "b.cbz"} {
		if got := digests(rel); len(got) != 0 {
			t.Errorf("%s was decompressed (%d digests): not a candidate", rel, len(got))
		}
	}

	if res, _, err := e.run(t, e.ctx); err != nil || res["page_digested"] != 0 {
		t.Fatalf("second run: %v %v, want nothing read again", res, err)
	}
	if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET mtime_ns = mtime_ns + 1 WHERE id = ?`, ids["d.cb7"]); err != nil {
		t.Fatal(err)
	}
	if got := digests("d.cb7"); len(got) != 0 {
		t.Fatalf("a changed file still shows %d digests of its old version", len(got))
	}
}

// TestPageDigestsRefusedAfterLostLease: once the job's lease is lost and
// the row recovered, its page digests are refused (store.ErrLeaseLost)
// and nothing is written, whether by the store call or by a run.
func TestPageDigestsRefusedAfterLostLease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := samebookCorpus(t, e)
	if _, err := storetest.Exec(e.ctx, e.control, `UPDATE jobs SET lease_expires_at = '2000-01-01 00:00:00.000' WHERE id = ?`, e.job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := leases.New(e.control).RecoverStale(e.ctx); err != nil {
		t.Fatal(err)
	}
	book := hashes.BookPageDigests{FileID: ids["a.cbz"], Pages: []hashes.PageDigest{{Size: 1, Digest: make([]byte, 32)}}}
	var err error
	if book.SizeBytes, err = storetest.QueryInt(e.ctx, e.control, `SELECT size_bytes FROM library_files WHERE id = ?`, book.FileID); err != nil {
		t.Fatal(err)
	}
	if book.MtimeNS, err = storetest.QueryInt(e.ctx, e.control, `SELECT mtime_ns FROM library_files WHERE id = ?`, book.FileID); err != nil {
		t.Fatal(err)
	}
	if _, err := hashes.New(e.worker).RecordPageDigests(e.ctx, e.job.Fence(), []hashes.BookPageDigests{book}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("record after the lease was lost: %v, want ErrLeaseLost", err)
	}
	if _, _, err := e.run(t, e.ctx); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("run after the lease was lost: %v, want it refused", err)
	}
	n, err := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM page_digests`)
	if err != nil || n != 0 {
		t.Fatalf("%d page digest rows (%v), want none", n, err)
	}
}

// TestRecordPageDigestsRefusesBadDigests: a digest that is not 32 bytes or
// a negative size is refused before anything is written.
func TestRecordPageDigestsRefusesBadDigests(t *testing.T) {
	t.Parallel()
	e := setup(t)
	id := e.addFile(t, "x.cbz", zipBook(t, zip.Store, 0, bookPages(5, 2), false))
	for _, p := range []hashes.PageDigest{{Size: 1, Digest: make([]byte, 31)}, {Size: -1, Digest: make([]byte, 32)}, {Size: 1}} {
		if _, err := hashes.New(e.worker).RecordPageDigests(e.ctx, e.job.Fence(), []hashes.BookPageDigests{{FileID: id, Pages: []hashes.PageDigest{p}}}); err == nil {
			t.Errorf("page %+v accepted", p)
		}
	}
}

// TestPageDigestReadsDrawFromTheIOBudget: what the digest phase reads of a
// book is taken from the I/O budget first, as the hash reads are, and a
// budget that refuses (its wait cancelled) stops the book.
func TestPageDigestReadsDrawFromTheIOBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := samebookCorpus(t, e)
	root, err := openLibRoot(e.lib)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fi, err := os.Stat(filepath.Join(e.lib, "a.cbz"))
	if err != nil {
		t.Fatal(err)
	}
	target := hashes.PageDigestTarget{ID: ids["a.cbz"], LibraryID: 1, RelativePath: "a.cbz",
		SizeBytes: fi.Size(), MtimeNS: fi.ModTime().UnixNano()}
	var taken int64
	b, err := digestBook(root, target, func(n int64) error { taken += n; return nil })
	if err != nil || len(b.Pages) != 6 {
		t.Fatalf("digest: %d pages, %v", len(b.Pages), err)
	}
	if taken < fi.Size()*9/10 {
		t.Fatalf("%d bytes taken from the budget for a stored archive of %d", taken, fi.Size())
	}
	refused := errors.New("budget wait cancelled")
	if _, err := digestBook(root, target, func(int64) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a refusing budget: %v", err)
	}
}

// cancelAfterBooks is a reporter that cancels the job once the digest
// phase (the calls whose total exceeds the first call's) has counted n
// books.
type cancelAfterBooks struct {
	progress
	n      int64
	cancel context.CancelFunc
	base   int64 // the hash passes' total, from the first call
	start  int64 // processed when the digest phase began; -1 before
}

func (c *cancelAfterBooks) Progress(processed, total int64) {
	c.progress.Progress(processed, total)
	switch {
	case len(c.calls) == 1:
		c.base, c.start = total, -1
	case total > c.base && c.start < 0:
		c.start = processed
	case c.start >= 0 && processed == c.start+c.n:
		c.cancel()
	}
}

// TestPageDigestPhaseProgressAndCancel: the digest phase's books join the
// job's progress (9 more than the hash passes' files, ending at total),
// and a cancel after the third book still writes the three books already
// digested, as a cancel in the hash passes keeps their batch.
func TestPageDigestPhaseProgressAndCancel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	samebookCorpus(t, e)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	rep := &cancelAfterBooks{n: 3, cancel: cancel}
	if _, err := e.exec.Execute(ctx, e.job, rep); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v, want context.Canceled", err)
	}
	if rep.start < 0 || rep.calls[len(rep.calls)-1][1] != rep.base+9 {
		t.Fatalf("progress calls %v: want the total raised by the 9 candidate books", rep.calls)
	}
	n, err := storetest.QueryInt(e.ctx, e.control, `SELECT count(DISTINCT file_id) FROM page_digests`)
	if err != nil || n != 3 {
		t.Fatalf("%d books have page digests after a cancel at the third (%v), want 3", n, err)
	}

	res, p, err := e.run(t, e.ctx)
	if err != nil || res["page_digested"] != 6 {
		t.Fatalf("next run: %v %v, want the other 6 books digested", res, err)
	}
	last := p.calls[len(p.calls)-1]
	if last[0] != last[1] {
		t.Fatalf("next run ended at progress %v, want processed = total", last)
	}
}
