// Package thumbs renders comic covers with libvips and keeps the cover cache
// under <state>/covers. It is workerd's thumbnail and cleanup executor.
//
// Strategy: one page is read into memory (bounded by thumbnail.max_source_mb,
// never an extraction to disk), decoded once through libvips' thumbnail path
// (shrink-on-load, EXIF rotation, sRGB), and re-encoded at falling quality
// until it fits the byte budget. The cover is written to a temp file in its
// shard folder, fsynced and renamed, so readers never see a partial cover.
// Every source path is resolved under its library root and every output
// path under <state>/covers (protocol §8), else path_violation.
package thumbs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/internal/video"
	"github.com/bindery-nas/bindery/protocol"
)

// Config configures a Renderer or Cleaner. Zero values take the documented
// defaults.
type Config struct {
	// StateDir is workerd's state folder; covers live in StateDir/covers.
	// Required.
	StateDir string
	// LibraryRoots are the folders every library must lie in (workerd's
	// --library-root); a library outside them is a path_violation. Nil:
	// each library's own path is the only root checked.
	LibraryRoots pathsafe.Roots
	// VipsConcurrency is libvips' worker threads per render; default 1
	// (the engine runs renders in parallel instead).
	VipsConcurrency int
	// SettingsTTL is how long the cover settings are cached between
	// renders; default 5s.
	SettingsTTL time.Duration
	// StaleTempAge is how old a temp file of ours must be before it is
	// taken for the leftover of a crash and removed; default 1h.
	StaleTempAge time.Duration
}

func (c Config) withDefaults() Config {
	if c.VipsConcurrency <= 0 {
		c.VipsConcurrency = 1
	}
	if c.SettingsTTL <= 0 {
		c.SettingsTTL = 5 * time.Second
	}
	if c.StaleTempAge <= 0 {
		c.StaleTempAge = time.Hour
	}
	return c
}

// Renderer renders claimed thumbnail rows (engine.ThumbnailExecutor). It
// is safe for concurrent use.
type Renderer struct {
	st    *store.Store
	th    *thumbnails.Store
	cfg   Config
	cache *cache

	mu       sync.Mutex
	settings settings.Values
	loadedAt time.Time

	renders, encodes, overBudget, cachedHashes atomic.Int64
}

// NewRenderer returns a renderer writing under cfg.StateDir/covers. It
// bounds libvips (operation cache off, cfg.VipsConcurrency threads).
func NewRenderer(st *store.Store, cfg Config) *Renderer {
	cfg = cfg.withDefaults()
	setupVips(cfg.VipsConcurrency)
	return &Renderer{st: st, th: thumbnails.New(st), cfg: cfg, cache: newCache(cfg.StateDir, cfg.StaleTempAge)}
}

// Stats counts what the renderer did since it started.
type Stats struct {
	// Renders is the number of covers written.
	Renders int64
	// Encodes is the number of encoder runs (Encodes/Renders is the mean
	// attempts per cover).
	Encodes int64
	// OverBudget counts covers kept over the byte budget at quality_min.
	OverBudget int64
	// CachedHashes counts hash rows served from the cached cover, without
	// a render.
	CachedHashes int64
}

// Stats returns the counters.
func (r *Renderer) Stats() Stats {
	return Stats{Renders: r.renders.Load(), Encodes: r.encodes.Load(), OverBudget: r.overBudget.Load(),
		CachedHashes: r.cachedHashes.Load()}
}

// Result is the outcome of a render.
type Result struct {
	Width, Height, BytesSize int64
	// Version is the file's new cover_updated_at.
	Version int64
	// Attempts is how many encodes the cover took (0: a hash row served
	// from the cached cover).
	Attempts int
	// Hash is the cover's CoverHash.
	Hash uint64
}

var _ engine.ThumbnailExecutor = (*Renderer)(nil)

// Render implements engine.ThumbnailExecutor; see RenderRow.
func (r *Renderer) Render(ctx context.Context, t model.Thumbnail) (engine.ThumbnailResult, error) {
	res, err := r.RenderRow(ctx, t)
	if err != nil {
		return engine.ThumbnailResult{}, err
	}
	h := int64(res.Hash) // the bit pattern, as the signed column stores it
	return engine.ThumbnailResult{Width: res.Width, Height: res.Height, BytesSize: res.BytesSize, CoverHash: &h}, nil
}

// RenderRow renders the cover of row t into t.OutputRelpath, hashes it
// (CoverHash) and gives the file a new cover version. A row of task hash
// only hashes the cover already cached at t.OutputRelpath, when there is
// one that decodes, and leaves the version alone. Errors are
// *protocol.Error with codes source_missing, path_violation,
// archive_encrypted, source_too_large, decode_error or io_error.
func (r *Renderer) RenderRow(ctx context.Context, t model.Thumbnail) (Result, error) {
	format, err := protocol.ParseImageFormat(string(t.Format))
	if err != nil {
		return Result{}, protocol.Errorf(protocol.ErrInvalidPayload, "thumbnail %d: %v", t.ID, err)
	}
	vals, err := r.loadSettings(ctx)
	if err != nil {
		return Result{}, protocol.Wrap(protocol.ErrIOError, err)
	}
	dst, err := r.cache.target(t.OutputRelpath)
	if err != nil {
		return Result{}, err
	}
	if t.Task == protocol.TaskHash {
		if res, ok := hashCached(dst); ok {
			r.cachedHashes.Add(1)
			return res, nil
		}
	}
	src, err := r.th.CoverSource(ctx, t.FileID)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, protocol.Errorf(protocol.ErrSourceMissing, "file %d no longer exists", t.FileID)
	}
	if err != nil {
		return Result{}, protocol.Wrap(protocol.ErrIOError, err)
	}
	var cover Cover
	if t.MediaType == protocol.MediaVideo {
		cover, err = r.renderVideo(ctx, src, optionsFrom(vals, format), video.LimitsFrom(vals))
	} else {
		cover, err = r.renderPage(ctx, src, optionsFrom(vals, format), vals)
	}
	if err != nil {
		return Result{}, err
	}
	r.encodes.Add(int64(cover.Attempts))
	if cover.OverBudget {
		r.overBudget.Add(1)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	hash, err := CoverHash(cover.Data)
	if err != nil {
		return Result{}, err
	}
	if err := r.cache.write(dst, cover.Data, nil); err != nil {
		return Result{}, err
	}
	v, err := r.th.MarkCoverRendered(ctx, t.Fence(), t.FileID)
	if errors.Is(err, store.ErrNotOwner) {
		return Result{}, err // the claim is lost: the engine writes nothing
	}
	if err != nil {
		return Result{}, protocol.Wrap(protocol.ErrIOError, err)
	}
	r.renders.Add(1)
	return Result{Width: int64(cover.Width), Height: int64(cover.Height), BytesSize: int64(len(cover.Data)),
		Version: v, Attempts: cover.Attempts, Hash: hash}, nil
}

// maxCachedCover bounds the read of a cached cover to hash: covers are
// tens of KiB; anything larger is not one of ours and is rendered again.
const maxCachedCover = 16 << 20

// hashCached hashes the cover cached at dst (a path target checked). ok is
// false when there is none, it is too large or it does not decode: the
// caller renders the cover instead.
func hashCached(dst string) (Result, bool) {
	f, err := os.Open(dst)
	if err != nil {
		return Result{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCachedCover+1))
	if err != nil || len(data) > maxCachedCover {
		return Result{}, false
	}
	w, h, err := header(data)
	if err != nil {
		return Result{}, false
	}
	hash, err := CoverHash(data)
	if err != nil {
		return Result{}, false
	}
	return Result{Width: int64(w), Height: int64(h), BytesSize: int64(len(data)), Hash: hash}, true
}

// renderPage renders the cover from a comic's cover page.
func (r *Renderer) renderPage(ctx context.Context, src thumbnails.CoverSource, o Options, vals settings.Values) (Cover, error) {
	page, err := r.readPage(ctx, src, vals.Int(settings.ThumbnailMaxSourceMB)<<20,
		vals.Int(settings.IOThumbnailRateLimitMBs)*1_000_000)
	if err != nil {
		return Cover{}, err
	}
	return RenderCover(page, o)
}

// optionsFrom reads scan.cover.* for format.
func optionsFrom(v settings.Values, format protocol.ImageFormat) Options {
	return Options{
		Width:        int(v.Int(settings.ScanCoverWidth)),
		Format:       format,
		TargetBytes:  int(v.Int(settings.ScanCoverTargetKB)) << 10,
		QualityStart: int(v.Int(settings.ScanCoverQualityStart)),
		QualityStep:  int(v.Int(settings.ScanCoverQualityStep)),
		QualityMin:   int(v.Int(settings.ScanCoverQualityMin)),
	}
}

func (r *Renderer) loadSettings(ctx context.Context) (settings.Values, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settings != nil && time.Since(r.loadedAt) < r.cfg.SettingsTTL {
		return r.settings, nil
	}
	v, err := settings.Load(ctx, r.st)
	if err != nil {
		return nil, fmt.Errorf("load settings: %w", err)
	}
	r.settings, r.loadedAt = v, time.Now()
	return v, nil
}

// readPage resolves the file under its library, opens it and reads its
// cover page, pacing the read through the global thumbnail I/O budget.
func (r *Renderer) readPage(ctx context.Context, src thumbnails.CoverSource, limit, bytesPerSec int64) ([]byte, error) {
	if src.IsMissing {
		return nil, protocol.Errorf(protocol.ErrSourceMissing, "file %d is missing from its library", src.FileID)
	}
	path, err := r.resolveSource(src)
	if err != nil {
		return nil, err
	}
	a, err := archive.Open(path)
	if err != nil {
		return nil, sourceErr(err)
	}
	defer a.Close()
	page, err := pickPage(a.Pages(), src.FrontCoverPage)
	if err != nil {
		return nil, err
	}
	if err := r.pace(ctx, min(page.Size, limit), bytesPerSec); err != nil {
		return nil, err
	}
	data, err := a.ReadEntry(page, limit)
	if err != nil {
		return nil, sourceErr(err)
	}
	return data, nil
}

// checkLibrary refuses a source whose library is not under the roots.
func (r *Renderer) checkLibrary(src thumbnails.CoverSource) error {
	ok, err := r.cfg.LibraryRoots.Contains(src.LibraryPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return protocol.Wrap(protocol.ErrSourceMissing, err)
	case err != nil:
		return protocol.Wrap(protocol.ErrPathViolation, err)
	case !ok:
		return protocol.Errorf(protocol.ErrPathViolation, "library %s is not under %s", src.LibraryPath, r.cfg.LibraryRoots)
	}
	return nil
}

// resolveSource checks the library root and the file by realpath.
func (r *Renderer) resolveSource(src thumbnails.CoverSource) (string, error) {
	if err := r.checkLibrary(src); err != nil {
		return "", err
	}
	path, err := pathsafe.Resolve(src.LibraryPath, filepath.FromSlash(src.RelativePath))
	switch {
	case errors.Is(err, pathsafe.ErrOutside):
		return "", protocol.Wrap(protocol.ErrPathViolation, err)
	case errors.Is(err, fs.ErrNotExist):
		return "", protocol.Wrap(protocol.ErrSourceMissing, err)
	case err != nil:
		return "", protocol.Wrap(protocol.ErrIOError, err)
	}
	return path, nil
}

// pickPage is the ComicInfo FrontCover page when it names a page, else the
// first page in natural order (Pages is already sorted; a loose image is
// its own single page). front is a 0-based index into the pages.
func pickPage(pages []archive.Entry, front *int64) (archive.Entry, error) {
	if len(pages) == 0 {
		return archive.Entry{}, protocol.Errorf(protocol.ErrDecodeError, "no image pages")
	}
	if front != nil && model.Deref(front) >= 0 && model.Deref(front) < int64(len(pages)) {
		return pages[model.Deref(front)], nil
	}
	return pages[0], nil
}

// pace waits for the global thumbnail I/O budget (io_rate_limits bucket
// thumbnail_io_global) before reading bytes; bytesPerSec ≤ 0 is unlimited.
func (r *Renderer) pace(ctx context.Context, bytes, bytesPerSec int64) error {
	if bytesPerSec <= 0 {
		return nil
	}
	wait, err := r.st.ReserveIO(ctx, store.BucketThumbnailIO, bytes, bytesPerSec)
	if err != nil {
		return protocol.Wrap(protocol.ErrIOError, err)
	}
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// sourceErr maps archive errors onto the thumbnail codes: a corrupt
// archive cannot be decoded; file-system trouble is io_error or, when the
// file vanished, source_missing. Coded errors keep their code.
func sourceErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return protocol.Wrap(protocol.ErrSourceMissing, err)
	}
	switch protocol.CodeOf(err, "") {
	case protocol.ErrArchiveCorrupt, protocol.ErrNoPages:
		return &protocol.Error{Code: protocol.ErrDecodeError, Message: err.Error(), Err: err}
	case "":
		return protocol.Wrap(protocol.ErrIOError, err)
	}
	return err
}
