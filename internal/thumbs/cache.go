package thumbs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// tempPrefix and tempSuffix name the temp files of an atomic cover write:
// ".<file name>.<random>.tmp" in the cover's own shard folder (same file
// system, so the rename is atomic). Only files of this shape, older than
// the stale age, are ever removed as crash leftovers.
const (
	tempPrefix = "."
	tempSuffix = ".tmp"
)

// cache is the cover cache under <state>/covers.
type cache struct {
	stateDir string
	dir      string // <state>/covers
	staleAge time.Duration

	swept sync.Map // shard folder → struct{}: crash leftovers removed once per process
}

func newCache(stateDir string, staleAge time.Duration) *cache {
	return &cache{stateDir: stateDir, dir: filepath.Join(stateDir, thumbnails.CoversDir), staleAge: staleAge}
}

// target checks an output_relpath (relative to the state dir, under
// covers/), creates its shard folder and returns the absolute path, after
// checking by realpath that the folder lies under <state>/covers.
func (c *cache) target(relpath string) (string, error) {
	if c.stateDir == "" {
		return "", protocol.Errorf(protocol.ErrPathViolation, "no state dir configured")
	}
	if !strings.HasPrefix(relpath, thumbnails.CoversDir+"/") || strings.Contains(relpath, `\`) {
		return "", protocol.Errorf(protocol.ErrPathViolation, "output path %q is not under %s/", relpath, thumbnails.CoversDir)
	}
	rel := filepath.FromSlash(strings.TrimPrefix(relpath, thumbnails.CoversDir+"/"))
	if filepath.Clean(rel) != rel || filepath.Dir(rel) == "." {
		return "", protocol.Errorf(protocol.ErrPathViolation, "output path %q is not <shard>/<file>", relpath)
	}
	dst, err := pathsafe.Lexical(c.dir, rel)
	if err != nil {
		return "", protocol.Wrap(protocol.ErrPathViolation, err)
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", protocol.Wrap(protocol.ErrIOError, fmt.Errorf("create cover folder: %w", err))
	}
	ok, err := pathsafe.Within(c.dir, dir)
	if err != nil {
		return "", protocol.Wrap(protocol.ErrIOError, err)
	}
	if !ok {
		return "", protocol.Errorf(protocol.ErrPathViolation, "cover folder %s resolves outside %s", dir, c.dir)
	}
	if st, err := os.Lstat(dst); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return "", protocol.Errorf(protocol.ErrPathViolation, "cover %s is a symlink", dst)
	}
	c.sweep(dir)
	c.removeOwnTemps(dst)
	return dst, nil
}

// removeOwnTemps removes temp files of earlier renders of dst: a render
// killed between creating its temp file and the rename leaves one behind.
// The protocol allows one live render per cover (one pending/running row
// per file and format, under a lease), so when this render holds the lease
// any other temp of the same name is a crash leftover — or a zombie's, whose
// rename then fails harmlessly.
func (c *cache) removeOwnTemps(dst string) {
	pattern := filepath.Join(filepath.Dir(dst), tempPrefix+globEscape(filepath.Base(dst))+".*"+tempSuffix)
	matches, _ := filepath.Glob(pattern)
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

// globEscape quotes the glob metacharacters of a file name.
func globEscape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`).Replace(s)
}

// write replaces dst with data atomically: temp file in the same folder,
// write, fsync, close, rename, fsync the folder. On any error the temp file
// is removed and dst is untouched. wrap (tests) may wrap the temp file's
// writer to inject failures.
func (c *cache) write(dst string, data []byte, wrap func(io.Writer) io.Writer) (err error) {
	dir := filepath.Dir(dst)
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(dst)+".*"+tempSuffix)
	if err != nil {
		return protocol.Wrap(protocol.ErrIOError, fmt.Errorf("create temp cover: %w", err))
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	var w io.Writer = f
	if wrap != nil {
		w = wrap(f)
	}
	if _, err := w.Write(data); err != nil {
		return protocol.Wrap(protocol.ErrIOError, fmt.Errorf("write cover: %w", err))
	}
	if err := f.Sync(); err != nil {
		return protocol.Wrap(protocol.ErrIOError, fmt.Errorf("sync cover: %w", err))
	}
	if err := f.Chmod(0o644); err != nil {
		return protocol.Wrap(protocol.ErrIOError, fmt.Errorf("chmod cover: %w", err))
	}
	if err := f.Close(); err != nil {
		return protocol.Wrap(protocol.ErrIOError, fmt.Errorf("close cover: %w", err))
	}
	if err := os.Rename(tmp, dst); err != nil {
		return protocol.Wrap(protocol.ErrIOError, fmt.Errorf("rename cover: %w", err))
	}
	syncDir(dir)
	return nil
}

// syncDir makes the rename durable; a failure only weakens durability,
// never atomicity, so it is not reported.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// sweep removes, once per folder per process, temp files of our naming
// older than the stale age: leftovers of a crash between write and rename.
// Younger ones may belong to a render in flight in another process.
func (c *cache) sweep(dir string) {
	if _, done := c.swept.LoadOrStore(dir, struct{}{}); done {
		return
	}
	c.removeStaleTemps(dir, time.Now())
}

func (c *cache) removeStaleTemps(dir string, now time.Time) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, tempPrefix) || !strings.HasSuffix(name, tempSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < c.staleAge {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err == nil || errors.Is(err, fs.ErrNotExist) {
			n++
		}
	}
	return n
}

// remove deletes the cache file of relpath if it exists, checking that it
// lies under <state>/covers; it reports whether a file was deleted. A path
// outside the cache is refused with path_violation and nothing is deleted.
func (c *cache) remove(relpath string) (bool, error) {
	if !strings.HasPrefix(relpath, thumbnails.CoversDir+"/") {
		return false, protocol.Errorf(protocol.ErrPathViolation, "output path %q is not under %s/", relpath, thumbnails.CoversDir)
	}
	rel := filepath.FromSlash(strings.TrimPrefix(relpath, thumbnails.CoversDir+"/"))
	dst, err := pathsafe.Lexical(c.dir, rel)
	if err != nil {
		return false, protocol.Wrap(protocol.ErrPathViolation, err)
	}
	ok, err := pathsafe.Within(c.dir, filepath.Dir(dst))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, protocol.Wrap(protocol.ErrIOError, err)
	}
	if !ok {
		return false, protocol.Errorf(protocol.ErrPathViolation, "cover folder of %s resolves outside %s", relpath, c.dir)
	}
	st, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, protocol.Wrap(protocol.ErrIOError, err)
	}
	if !st.Mode().IsRegular() && st.Mode()&fs.ModeSymlink == 0 {
		return false, protocol.Errorf(protocol.ErrPathViolation, "cover %s is not a regular file", dst)
	}
	// A symlink is removed as a link (os.Remove never follows it), so its
	// target, wherever it points, is untouched.
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, protocol.Wrap(protocol.ErrIOError, err)
	}
	return true, nil
}
