package scan

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pipeline"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/protocol"
)

// discover is phase 1: it walks the library and merges the walk with the
// library's rows, both in relative_path byte order, like a merge join:
//
//   - a path only on disk is a new row (needs analysis and a hash);
//   - a path on both sides with the same (size, mtime) is unchanged and
//     costs no write at all; a different signature is a change;
//   - a row seen again while marked missing is restored;
//   - a row only in the database is marked missing (never deleted).
//
// Memory is one folder listing, one page of rows and two batches of
// writes, whatever the size of the library. Writes go in batches of
// BatchSize rows per transaction, each idempotent, so a killed scan
// resumes cleanly, and each is written behind the walk that goes on
// (pipeline.Behind): a batch's rows all lie before the walk's position,
// and so before every page the pager reads next.
type discover struct {
	run    *run
	pager  sigPager
	batch  scanning.DiscoveryBatch
	writes pipeline.Behind
	// writing is the files seen up to the batch being written: the
	// progress once it has landed.
	writing int64
	last    string
	// estimate is the expected number of files, for progress.
	estimate int64
}

func (d *discover) do(ctx context.Context) error {
	r := d.run
	d.pager = sigPager{sc: r.sc, lib: r.libID, limit: max(r.cfg.BatchSize*2, 100)}
	d.resetBatch()
	est, err := r.sc.CountPresentFiles(ctx, r.libID)
	if err != nil {
		return err
	}
	d.estimate = est
	exts := r.vals.Extensions()
	if !r.video {
		exts = withoutVideo(exts)
	}
	w := &walker{root: r.root, exts: exts, errs: d.addError}
	if r.paths == nil {
		err = d.scope(ctx, "", func() error { return w.walk(ctx, d.visit) })
	} else {
		err = d.folders(ctx, w)
	}
	r.counts.DirectoriesSeen = w.dirs
	if err == nil {
		err = d.flush(ctx)
	}
	if werr := d.settle(); err == nil {
		err = werr
	}
	return err
}

// folders discovers only under the job's folders, each merged with the rows
// under it: rows elsewhere are neither seen nor missing. The folders are
// sorted and none lies inside another, so their subtrees follow one another
// in byte order. The library root must still be readable (an unmounted
// library marks nothing missing); a folder that is gone marks its rows
// missing.
func (d *discover) folders(ctx context.Context, w *walker) error {
	if _, err := os.ReadDir(w.root); err != nil {
		return protocol.Wrap(protocol.ErrLibraryMissing, err)
	}
	for _, f := range d.run.paths {
		if err := d.scope(ctx, f, func() error { return w.folder(ctx, f, d.visit) }); err != nil {
			return err
		}
	}
	return nil
}

// scope merges one walk with the rows under folder ("" the whole library):
// rows the walk did not reach are unseen.
func (d *discover) scope(ctx context.Context, folder string, walk func() error) error {
	d.pager.folder, d.pager.after, d.pager.done, d.pager.buf, d.pager.pos = folder, "", false, nil, 0
	if err := walk(); err != nil {
		return err
	}
	for {
		sig, ok, err := d.pager.peek(ctx)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		d.unseen(sig)
		d.pager.next()
		if err := d.maybeFlush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// visit merges one walk item with the rows that sort before or at it.
func (d *discover) visit(it item) error {
	ctx := d.run.ctx
	if it.rel <= d.last {
		return fmt.Errorf("discover: walk order broken at %q after %q", it.rel, d.last)
	}
	d.last = it.rel
	for {
		sig, ok, err := d.pager.peek(ctx)
		if err != nil {
			return err
		}
		if !ok || sig.RelativePath >= it.rel {
			break
		}
		d.unseen(sig)
		d.pager.next()
	}
	if it.opaque {
		if err := d.skipPrefix(ctx, it.rel); err != nil {
			return err
		}
		return d.maybeFlush(ctx)
	}
	c := &d.run.counts
	if it.stat.Role != protocol.RoleFolder { // its pages are counted
		c.FilesSeen++
		c.BytesSeen += it.stat.SizeBytes
	}
	sig, ok, err := d.pager.peek(ctx)
	if err != nil {
		return err
	}
	if ok && sig.RelativePath == it.rel {
		d.seen(sig, it.stat)
		d.pager.next()
	} else {
		d.batch.Insert = append(d.batch.Insert, it.stat)
		c.Added++
	}
	if c.FilesSeen%256 == 0 {
		d.run.progress(c.FilesSeen, max(d.estimate, c.FilesSeen))
	}
	return d.maybeFlush(ctx)
}

// seen compares a row with the file found at its path. An unchanged row is
// analysed again when the scan is forced or when its last analysis failed
// with io_error. A row whose role changed (an image that became a page of
// a folder book, or a book again) is updated and analysed again.
func (d *discover) seen(sig scanning.FileSig, st scanning.FileStat) {
	c := &d.run.counts
	same := sig.SizeBytes == st.SizeBytes && sig.MtimeNS == st.MtimeNS
	switch {
	case same && !sig.IsMissing && sig.Role == st.Role:
		c.Unchanged++
	case same:
		if sig.IsMissing {
			c.Restored++
		} else {
			c.Changed++
		}
		d.batch.Update = append(d.batch.Update, scanning.FileUpdate{ID: sig.ID, FileStat: st})
	default:
		c.Changed++
		if sig.IsMissing {
			c.Restored++
		}
		d.batch.Update = append(d.batch.Update, scanning.FileUpdate{ID: sig.ID, FileStat: st, SigChanged: true})
	}
	if same && (d.run.force || sig.RetryAnalysis) {
		d.batch.Reanalyze = append(d.batch.Reanalyze, sig.ID)
	}
}

// unseen handles a row no file was found for.
func (d *discover) unseen(sig scanning.FileSig) {
	if sig.IsMissing {
		return
	}
	d.run.counts.Missing++
	d.batch.Missing = append(d.batch.Missing, sig.ID)
}

// skipPrefix passes over the rows under a folder that could not be read.
func (d *discover) skipPrefix(ctx context.Context, prefix string) error {
	for {
		sig, ok, err := d.pager.peek(ctx)
		if err != nil || !ok || !strings.HasPrefix(sig.RelativePath, prefix) {
			return err
		}
		d.pager.next()
	}
}

func (d *discover) addError(e model.ScanError) {
	d.run.counts.ErrorCount++
	d.batch.Errors = append(d.batch.Errors, e)
}

func (d *discover) maybeFlush(ctx context.Context) error {
	if d.batch.Len()+len(d.batch.Errors) < d.run.cfg.BatchSize {
		return nil
	}
	return d.flush(ctx)
}

// flush writes the pending batch with the session's running counts. A batch
// without writes costs nothing: an unchanged library is never written to.
func (d *discover) flush(ctx context.Context) error {
	if d.batch.Empty() {
		return nil
	}
	if err := d.settle(); err != nil {
		return err
	}
	b := d.batch
	b.Counts = d.run.counts
	d.writing = d.run.counts.FilesSeen
	d.writes.Start(func() error { return d.run.sc.ApplyDiscovery(ctx, d.run.fence, &b) })
	d.resetBatch()
	return nil
}

// settle waits for the batch being written and reports it as progress.
func (d *discover) settle() error {
	waited, err := d.writes.Wait()
	if waited && err == nil {
		d.run.progress(d.writing, max(d.estimate, d.writing))
	}
	return err
}

// resetBatch starts an empty batch; the one before may still be being
// written, so none of its slices is reused.
func (d *discover) resetBatch() {
	r := d.run
	d.batch = scanning.DiscoveryBatch{SessionID: r.session.ID, LibraryID: r.libID, MissingSince: r.session.StartedAt}
}

// sigPager reads a library's rows in relative_path order, one page at a
// time (keyset pagination, so no read transaction stays open).
type sigPager struct {
	sc    *scanning.Store
	lib   int64
	limit int
	// folder limits the rows to one folder of a scoped scan ("" all).
	folder string
	buf    []scanning.FileSig
	pos    int
	after  string
	done   bool
}

func (p *sigPager) peek(ctx context.Context) (scanning.FileSig, bool, error) {
	if p.pos < len(p.buf) {
		return p.buf[p.pos], true, nil
	}
	if p.done {
		return scanning.FileSig{}, false, nil
	}
	page, err := p.sc.FileSigsUnder(ctx, p.lib, p.folder, p.after, p.limit)
	if err != nil {
		return scanning.FileSig{}, false, err
	}
	p.buf, p.pos = page, 0
	if len(page) < p.limit {
		p.done = true
	}
	if len(page) == 0 {
		return scanning.FileSig{}, false, nil
	}
	p.after = page[len(page)-1].RelativePath
	return p.buf[0], true, nil
}

func (p *sigPager) next() { p.pos++ }
