package scan

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/natsort"
	"github.com/bindery-nas/bindery/internal/pagesig"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/pipeline"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/protocol"
)

// analyze is phase 3: every present row that needs analysis is opened, in
// parallel (scan.max_workers), and its archive index read: page count,
// ComicInfo.xml, series name. Nothing is decompressed but ComicInfo.xml.
// Results are written a batch at a time, each behind the analysis of the
// next (pipeline.Behind: the writes took a third of a cold first scan's
// analysis when the two took turns); the next batch's query selects rows
// after the last id, which no earlier batch's write changes. A batch
// interrupted by a cancel is dropped whole and redone by the next scan
// (its rows still need analysis).
func (r *run) analyze(ctx context.Context) error {
	total, err := r.sc.CountToAnalyze(ctx, r.libID)
	if err != nil {
		return err
	}
	done := int64(0)
	r.progress(r.counts.FilesSeen, r.counts.FilesSeen+total)
	var writes pipeline.Behind
	settle := func() error {
		waited, err := writes.Wait()
		if waited && err == nil {
			r.progress(r.counts.FilesSeen+done, r.counts.FilesSeen+max(total, done))
		}
		return err
	}
	var after int64
	for {
		targets, err := r.sc.FilesToAnalyze(ctx, r.libID, after, r.cfg.BatchSize)
		if err != nil {
			return errors.Join(err, settle())
		}
		if len(targets) == 0 {
			return settle()
		}
		after = targets[len(targets)-1].ID
		results := r.analyzeAll(ctx, targets)
		if err := settle(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b := &scanning.AnalysisBatch{SessionID: r.session.ID, Results: make([]scanning.Analysis, 0, len(results))}
		for _, res := range results {
			b.Results = append(b.Results, res.analysis)
			b.Errors = append(b.Errors, res.errs...)
			r.counts.ErrorCount += int64(len(res.errs))
		}
		b.Counts = r.counts
		done += int64(len(targets))
		writes.Start(func() error { return r.sc.ApplyAnalysis(ctx, r.fence, b) })
	}
}

type fileResult struct {
	analysis scanning.Analysis
	errs     []model.ScanError
}

// analyzeAll analyses targets with the configured number of workers and
// returns the results in the targets' order.
func (r *run) analyzeAll(ctx context.Context, targets []scanning.FileTarget) []fileResult {
	out := make([]fileResult, len(targets))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(r.vals.Workers(), len(targets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				out[i] = r.analyzeFile(targets[i])
			}
		}()
	}
	for i := range targets {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return out
}

// analyzeFile reads one file's index and sets the book's sort key from
// what it found (ComicInfo Number and Volume, else the file name). A page
// of a folder book and series art are read like any image but are no
// book: they join no series, and only art gets a cover of its own.
func (r *run) analyzeFile(t scanning.FileTarget) fileResult {
	res := r.readIndex(t)
	a := &res.analysis
	m := a.Metadata
	a.SortKey = natsort.BookKey(model.Deref(m.Number), model.Deref(m.Volume), m.Volume != nil, t.RelativePath)
	if !t.Role.IsBook() {
		a.SeriesNameRaw = ""
		a.NeedsCover = a.NeedsCover && t.Role == protocol.RoleSidecar
	}
	return res
}

// readIndex reads one file's index. A file that cannot be read keeps a
// row with the error code and a series guessed from its path, so it still
// shows up in its folder's series; the scan goes on.
func (r *run) readIndex(t scanning.FileTarget) fileResult {
	guess := layout.GuessSeries(strings.TrimSuffix(t.RelativePath, "/"))
	res := fileResult{analysis: scanning.Analysis{ID: t.ID, SeriesNameRaw: guess.Name}}
	a := &res.analysis
	a.Metadata = model.FileMetadata{Source: string(guess.Source), Series: nullStr(guess.Name), Year: nullInt(guess.Year)}
	fail := func(err error) fileResult {
		a.ErrorCode = protocol.CodeOf(err, protocol.ErrIOError)
		a.ErrorMessage = err.Error()
		res.errs = append(res.errs, model.ScanError{RelativePath: t.RelativePath, ErrorCode: a.ErrorCode, Message: a.ErrorMessage})
		return res
	}
	abs, err := pathsafe.Resolve(r.root, t.RelativePath)
	if err != nil {
		return fail(protocol.Wrap(protocol.ErrIOError, err))
	}
	if v, ok, err := r.openVideo(t, nil); ok {
		if err != nil {
			return fail(err)
		}
		return r.readVideo(t, v, &res, fail)
	}
	arc, err := archive.Open(abs)
	if err != nil {
		if v, ok, _ := r.openVideo(t, err); ok {
			return r.readVideo(t, v, &res, fail)
		}
		return fail(err)
	}
	defer arc.Close()
	a.Format = string(arc.Format())
	pages := int64(len(arc.Pages()))
	a.TotalPages = &pages
	data, ok, err := arc.ComicInfo()
	if err != nil {
		return fail(err)
	}
	if ok {
		meta, series, perr := parseComicInfo(data)
		if perr != nil {
			res.errs = append(res.errs, model.ScanError{RelativePath: t.RelativePath, ErrorCode: protocol.ErrArchiveCorrupt,
				Message: "ComicInfo.xml ignored: " + perr.Error()})
		} else {
			a.Metadata = meta
			if series != "" {
				a.SeriesNameRaw = series
			} else {
				a.Metadata.Series = nullStr(guess.Name)
				if a.Metadata.Year == nil {
					a.Metadata.Year = nullInt(guess.Year)
				}
			}
		}
	}
	if model.Deref(a.TotalPages) == 0 {
		return fail(protocol.Errorf(protocol.ErrNoPages, "no image pages"))
	}
	a.PageSignature, a.PagesKey = signature(arc.Pages())
	a.NeedsCover = r.coverMode
	return res
}

// signature is the book's page signature from its index, and its key.
func signature(entries []archive.Entry) (sig, key []byte) {
	pages := make([]pagesig.Page, len(entries))
	for i, e := range entries {
		pages[i] = pagesig.Page{Size: e.Size, CRC32: e.CRC32, HasCRC: e.HasCRC}
	}
	return pagesig.Encode(pages), pagesig.Key(pages)
}

// nullStr is s, or nil (NULL) when it is empty.
func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullInt is n, or nil (NULL) when it is 0.
func nullInt(n int) *int64 {
	if n == 0 {
		return nil
	}
	v := int64(n)
	return &v
}
