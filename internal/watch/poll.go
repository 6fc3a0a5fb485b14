package watch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bindery-nas/bindery/internal/layout"
)

// pollSource reads the mtime of every folder of the library each interval:
// a folder's mtime moves when an entry is created, removed or renamed in
// it, so one stat per folder finds what changed, without listing the tree.
// Only a folder whose mtime moved is listed again, for new subfolders. A
// file rewritten in place, without any create or rename, is not seen until
// its folder changes or the library's periodic scan.
type pollSource struct {
	root     string
	interval time.Duration
	folders  map[string]time.Time
}

func newPoll(root string, interval time.Duration) *pollSource {
	return &pollSource{root: root, interval: interval, folders: map[string]time.Time{}}
}

func (s *pollSource) start() error {
	if _, err := os.Stat(s.root); err != nil {
		return errRootGone
	}
	s.addTree("", nil)
	return nil
}

func (s *pollSource) run(ctx context.Context, emit func(string)) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.poll(emit); err != nil {
				return err
			}
		}
	}
}

func (s *pollSource) poll(emit func(string)) error {
	if _, err := os.Stat(s.root); err != nil {
		return errRootGone
	}
	for rel, was := range s.folders {
		if _, known := s.folders[rel]; !known {
			continue // dropped with a vanished parent during this pass
		}
		info, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.IsDir()) {
			s.drop(rel)
			emit(rel)
			continue
		}
		if err != nil || info.ModTime().Equal(was) {
			continue
		}
		s.folders[rel] = info.ModTime()
		emit(rel)
		s.newSubfolders(rel, emit)
	}
	return nil
}

func (s *pollSource) newSubfolders(rel string, emit func(string)) {
	ents, err := os.ReadDir(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		return
	}
	for _, e := range ents {
		sub := joinRel(rel, e.Name())
		if _, known := s.folders[sub]; e.IsDir() && !known && !layout.SkipName(e.Name()) {
			s.addTree(sub, emit)
		}
	}
}

// addTree records folder rel and every folder under it, reporting each to emit
// when set.
func (s *pollSource) addTree(rel string, emit func(string)) {
	_ = filepath.WalkDir(filepath.Join(s.root, filepath.FromSlash(rel)), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		r, _ := relOf(s.root, p)
		if r != rel && layout.SkipName(d.Name()) {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil {
			s.folders[r] = info.ModTime()
		}
		if emit != nil {
			emit(r)
		}
		return nil
	})
}

func (s *pollSource) drop(rel string) {
	for r := range s.folders {
		if r == rel || strings.HasPrefix(r, rel+"/") {
			delete(s.folders, r)
		}
	}
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
