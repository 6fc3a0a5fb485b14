package watch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"

	"github.com/bindery-nas/bindery/internal/layout"
)

// errWatchLimit: the kernel refused a watch (ENOSPC, max_user_watches
// reached). The library falls back to polling; it is not a failure.
var errWatchLimit = errors.New("inotify watch limit reached")

// errRootGone: the library root vanished (unmounted, renamed). The watcher
// fails, and its restart waits for the root to come back.
var errRootGone = errors.New("library root is gone")

// inotifySource watches every folder of a library with inotify and turns
// each event into the folder whose listing it changed: a file's parent, a
// created folder itself (with its whole new subtree), a removed or
// renamed-away folder itself (its rows go missing).
type inotifySource struct {
	root    string
	w       *fsnotify.Watcher
	watched map[string]bool
}

func newInotify(root string) (*inotifySource, error) {
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, err
	}
	return &inotifySource{root: root, w: w, watched: map[string]bool{}}, nil
}

// start adds a watch on every folder; it is separate from run so that the
// watch is in place before the caller requests a catch-up scan.
func (s *inotifySource) start() error {
	if err := s.addTree("", nil); err != nil {
		s.w.Close()
		return err
	}
	return nil
}

func (s *inotifySource) run(ctx context.Context, emit func(string)) error {
	defer s.w.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-s.w.Events:
			if !ok {
				return errors.New("inotify event stream closed")
			}
			if err := s.event(ev, emit); err != nil {
				return err
			}
		case err, ok := <-s.w.Errors:
			if !ok {
				return errors.New("inotify error stream closed")
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return err
			}
			emit("") // events were lost: the whole library
		}
	}
}

func (s *inotifySource) event(ev fsnotify.Event, emit func(string)) error {
	rel, ok := relOf(s.root, ev.Name)
	if !ok || skipped(rel) {
		return nil
	}
	switch {
	case rel == "" && ev.Has(fsnotify.Remove|fsnotify.Rename):
		return errRootGone
	case ev.Has(fsnotify.Remove | fsnotify.Rename):
		if s.watched[rel] {
			s.forget(rel)
			emit(rel)
			return nil
		}
	case ev.Has(fsnotify.Create):
		if info, err := os.Lstat(ev.Name); err == nil && info.IsDir() {
			return s.addTree(rel, emit)
		}
	}
	if rel != "" {
		emit(parent(rel))
	}
	return nil
}

// addTree watches folder rel and every folder under it. With emit set
// (a folder created after the start), each is reported: files may have
// landed in it before its watch was in place.
func (s *inotifySource) addTree(rel string, emit func(string)) error {
	return filepath.WalkDir(filepath.Join(s.root, filepath.FromSlash(rel)), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // gone meanwhile, or a file
		}
		r, _ := relOf(s.root, p)
		if r != rel && layout.SkipName(d.Name()) {
			return filepath.SkipDir
		}
		if err := s.w.Add(p); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return errWatchLimit
			}
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		s.watched[r] = true
		if emit != nil {
			emit(r)
		}
		return nil
	})
}

// forget drops the watches of folder rel and its subfolders: a renamed
// folder's watch would otherwise report its events under the old name.
func (s *inotifySource) forget(rel string) {
	for r := range s.watched {
		if r == rel || strings.HasPrefix(r, rel+"/") {
			_ = s.w.Remove(filepath.Join(s.root, filepath.FromSlash(r)))
			delete(s.watched, r)
		}
	}
}

// relOf is p relative to root, '/'-separated ("" for the root itself).
func relOf(root, p string) (string, bool) {
	r, err := filepath.Rel(root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

// skipped: some element of rel is a name the library never indexes
// (.bindery-trash, dot-folders, @eaDir...).
func skipped(rel string) bool {
	for _, el := range strings.Split(rel, "/") {
		if el != "" && layout.SkipName(el) {
			return true
		}
	}
	return false
}

func parent(rel string) string {
	if p := path.Dir(rel); p != "." {
		return p
	}
	return ""
}
