package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/protocol"
)

// source is one way of hearing of changes: inotify or polling.
type source interface {
	// start establishes the watch (a catch-up scan is requested after it,
	// so nothing falls between).
	start() error
	// run reports changed folders to emit until ctx ends or it fails.
	run(ctx context.Context, emit func(string)) error
}

// params is what one library's watcher runs with; a change restarts it.
type params struct {
	root     string
	mode     protocol.WatchMode
	settle   time.Duration
	interval time.Duration
}

// library watches one library: it picks a source, feeds a settler and
// requests a folder-scoped scan of the folders that settled.
type library struct {
	id      int64
	p       params
	m       *Manager
	request func(ctx context.Context, paths []string, reason string) error
}

// choose picks the source: poll when set to, or (auto) on a network mount;
// otherwise inotify, unless the library has more folders than
// max_user_watches allows. st is what the status will show once the
// source has started.
func (l *library) choose() (src source, st Status, err error) {
	st = Status{Mode: l.p.mode, Active: "poll"}
	if st.FSType, err = fsTypeOf(l.p.root); err != nil {
		return nil, st, errRootGone
	}
	poll := func(reason string) (source, Status, error) {
		st.Reason = reason
		return newPoll(l.p.root, l.p.interval), st, nil
	}
	if l.p.mode == protocol.WatchPoll {
		return poll("watch is set to poll")
	}
	if l.p.mode == protocol.WatchAuto && networkTypes[st.FSType] {
		return poll(fmt.Sprintf("network mount (%s): inotify does not hear other clients", st.FSType))
	}
	if st.Folders, err = countFolders(l.p.root); err != nil {
		return nil, st, errRootGone
	}
	if st.MaxUserWatches, err = maxUserWatches(l.m.cfg.MaxWatchesFile); err != nil {
		return nil, st, err
	}
	if st.Folders > st.MaxUserWatches {
		st.WatchLimitShort = true
		return poll(fmt.Sprintf("needs %d inotify watches, fs.inotify.max_user_watches is %d", st.Folders, st.MaxUserWatches))
	}
	in, err := newInotify(l.p.root)
	if err != nil {
		return poll("inotify unavailable: " + err.Error())
	}
	st.Active = "inotify"
	return in, st, nil
}

// start starts the chosen source, falling back to polling when the kernel
// refuses an inotify watch, and publishes the status.
func (l *library) start() (source, error) {
	src, st, err := l.choose()
	if err != nil {
		return nil, err
	}
	if err = src.start(); errors.Is(err, errWatchLimit) {
		st.Active, st.WatchLimitShort = "poll", true
		st.Reason = "the kernel refused an inotify watch (fs.inotify.max_user_watches reached)"
		src = newPoll(l.p.root, l.p.interval)
		err = src.start()
	}
	if err != nil {
		return nil, err
	}
	if p, ok := src.(*pollSource); ok {
		st.Folders = len(p.folders)
	}
	l.m.setStatus(l.id, func(s *Status) {
		s.Mode, s.Active, s.Reason, s.FSType = st.Mode, st.Active, st.Reason, st.FSType
		s.Folders, s.MaxUserWatches, s.WatchLimitShort = st.Folders, st.MaxUserWatches, st.WatchLimitShort
	})
	return src, nil
}

// run watches until ctx ends or the watch fails. catchUp requests one
// library-wide scan once the watch is in place (after a failure, events
// may have been lost).
func (l *library) run(ctx context.Context, catchUp bool) error {
	src, err := l.start()
	if err != nil {
		return err
	}
	if catchUp {
		if err := l.request(ctx, nil, "watch catch-up"); err != nil {
			return err
		}
	}
	return l.loop(ctx, src)
}

func (l *library) loop(ctx context.Context, src source) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := make(chan string, 1024)
	errc := make(chan error, 1)
	go func() {
		errc <- src.run(ctx, func(rel string) {
			select {
			case changes <- rel:
			case <-ctx.Done():
			}
		})
	}()
	st := newSettler(l.p.root, l.p.settle)
	tick := time.NewTicker(min(max(l.p.settle/10, 50*time.Millisecond), 250*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case rel := <-changes:
			st.touch(rel, time.Now())
		case now := <-tick.C:
			if err := l.flush(ctx, st.ready(now)); err != nil {
				return err
			}
			l.m.setStatus(l.id, func(s *Status) { s.PendingFolders = st.pending() })
		}
	}
}

// flush requests one scan of the folders that settled together.
func (l *library) flush(ctx context.Context, folders []string) error {
	if len(folders) == 0 {
		return nil
	}
	paths := make([]string, len(folders))
	for i, f := range folders {
		paths[i] = f + "/"
		if f == "" {
			paths[i] = "."
		}
	}
	norm, err := protocol.NormalizeScanPaths(paths)
	if err != nil {
		norm = nil // more folders than a job names: the whole library
	}
	return l.request(ctx, norm, "watch")
}

// countFolders counts the folders inotify would watch.
func countFolders(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && layout.SkipName(d.Name()) {
			return filepath.SkipDir
		}
		n++
		return nil
	})
	return n, err
}
