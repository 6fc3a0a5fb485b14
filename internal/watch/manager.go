// Package watch is controld's change watcher (issue 39): it turns file
// system events in the libraries into folder-scoped scan requests, and
// nothing else: workerd's scan reads the media, as for any other request.
//
// Each library with watch != off gets a watcher: inotify on every folder
// where the kernel delivers events, polling of folder mtimes where it does
// not (network mounts, or more folders than fs.inotify.max_user_watches).
// Changed folders are requested once their listing held still for
// watch.settle_ms, so a file being copied is not scanned half-written and
// a copy of many files costs one request per folder per settle window. A
// watcher that fails (its root unmounted, inotify broken, a panic) restarts
// with backoff once its root is back and requests one library-wide
// catch-up scan.
package watch

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/protocol"
)

// Config configures a Manager. Zero values take the defaults.
type Config struct {
	Store  *store.Store
	Logger *slog.Logger
	// Kick wakes the dispatcher after a request was queued.
	Kick func()
	// MaxWatchesFile holds the inotify watch limit; default
	// /proc/sys/fs/inotify/max_user_watches.
	MaxWatchesFile string
	// Reconcile is how often libraries and settings are read again;
	// default 5 s.
	Reconcile time.Duration
	// Backoff is the first wait before a failed watcher restarts, doubled
	// up to 30 s; default 1 s.
	Backoff time.Duration
}

// Status is what GET /libraries/{id} shows of a library's watcher.
type Status struct {
	// Mode is the library's watch setting.
	Mode protocol.WatchMode `json:"mode"`
	// Active is what runs: inotify, poll, off, or down (failed, waiting
	// to restart).
	Active string `json:"active"`
	// Reason says why poll (or down) was chosen.
	Reason string `json:"reason,omitempty"`
	FSType string `json:"fs_type,omitempty"`
	// Folders is how many inotify watches the library needs.
	Folders        int `json:"folders"`
	MaxUserWatches int `json:"max_user_watches"`
	// WatchLimitShort: the library needs more watches than the kernel
	// allows; it is polled instead.
	WatchLimitShort bool       `json:"watch_limit_short"`
	PendingFolders  int        `json:"pending_folders"`
	Requests        int64      `json:"requests"`
	LastRequestAt   *time.Time `json:"last_request_at,omitempty"`
	Restarts        int        `json:"restarts"`
	LastError       string     `json:"last_error,omitempty"`
}

// Manager runs one watcher per watched library.
type Manager struct {
	cfg    Config
	mu     sync.Mutex
	status map[int64]*Status
	libs   map[int64]*running
	wg     sync.WaitGroup
	// onRequest, when set (tests), sees every request made.
	onRequest func(id int64, paths []string, reason string)
}

type running struct {
	p      params
	cancel context.CancelFunc
}

// New returns a Manager; Run starts it.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxWatchesFile == "" {
		cfg.MaxWatchesFile = "/proc/sys/fs/inotify/max_user_watches"
	}
	if cfg.Reconcile <= 0 {
		cfg.Reconcile = 5 * time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	return &Manager{cfg: cfg, status: map[int64]*Status{}, libs: map[int64]*running{}}
}

// Run reconciles the watchers with the libraries until ctx ends, then stops
// them all.
func (m *Manager) Run(ctx context.Context) error {
	defer m.wg.Wait()
	defer m.stopAll()
	t := time.NewTicker(m.cfg.Reconcile)
	defer t.Stop()
	for {
		if err := m.reconcile(ctx); err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("watch: reading libraries", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Status is the watcher status of a library; false when the manager has
// not seen it yet.
func (m *Manager) Status(id int64) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.status[id]
	if !ok {
		return Status{}, false
	}
	return *s, true
}

func (m *Manager) setStatus(id int64, f func(*Status)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.status[id]
	if !ok {
		s = &Status{}
		m.status[id] = s
	}
	f(s)
}

func (m *Manager) reconcile(ctx context.Context) error {
	vals, err := settings.Load(ctx, m.cfg.Store)
	if err != nil {
		return err
	}
	want := map[int64]params{}
	for after := int64(0); ; {
		libs, err := m.cfg.Store.ListLibraries(ctx, after, 500)
		if err != nil {
			return err
		}
		for _, l := range libs {
			want[l.ID] = params{root: l.Path, mode: l.Watch, settle: time.Duration(vals.Int(settings.WatchSettleMS)) * time.Millisecond,
				interval: time.Duration(vals.Int(settings.WatchPollIntervalSeconds)) * time.Second}
			after = l.ID
		}
		if len(libs) < 500 {
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, r := range m.libs {
		if p, ok := want[id]; !ok || p != r.p {
			r.cancel()
			delete(m.libs, id)
		}
	}
	for id, p := range want {
		if _, ok := m.libs[id]; ok {
			continue
		}
		m.status[id] = &Status{Mode: p.mode, Active: string(protocol.WatchOff)}
		if p.mode == protocol.WatchOff {
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		m.libs[id] = &running{p: p, cancel: cancel}
		m.wg.Add(1)
		go m.supervise(wctx, &library{id: id, p: p, m: m})
	}
	for id := range m.status {
		if _, ok := want[id]; !ok {
			delete(m.status, id)
		}
	}
	return nil
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, r := range m.libs {
		r.cancel()
		delete(m.libs, id)
	}
}

// supervise runs a library's watcher, restarting it after a failure (with
// a catch-up scan) until ctx ends.
func (m *Manager) supervise(ctx context.Context, l *library) {
	defer m.wg.Done()
	l.request = func(ctx context.Context, paths []string, reason string) error {
		return m.request(ctx, l.id, paths, reason)
	}
	wait := m.cfg.Backoff
	for catchUp := false; ; catchUp = true {
		err := safeRun(ctx, l, catchUp)
		if ctx.Err() != nil {
			return
		}
		m.cfg.Logger.Warn("watch: watcher stopped, restarting", "library", l.id, "err", err, "in", wait)
		m.setStatus(l.id, func(s *Status) { s.Active, s.Restarts, s.LastError = "down", s.Restarts+1, fmt.Sprint(err) })
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 30*time.Second)
	}
}

func safeRun(ctx context.Context, l *library, catchUp bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("watcher panicked: %v", p)
		}
	}()
	if err = l.run(ctx, catchUp); err == nil && ctx.Err() == nil {
		err = fmt.Errorf("watcher returned")
	}
	return err
}

// request asks for a scan of the library's folders (nil: all of it).
func (m *Manager) request(ctx context.Context, id int64, paths []string, reason string) error {
	out, err := queue.New(m.cfg.Store).RequestJob(ctx, queue.JobRequest{Kind: protocol.JobKindScan, Priority: protocol.PriorityNormal,
		Reason: reason, Paths: paths, LibraryID: new(int64(id))})
	if err != nil {
		return fmt.Errorf("watch: request scan of library %d: %w", id, err)
	}
	if m.onRequest != nil {
		m.onRequest(id, paths, reason)
	}
	now := time.Now()
	m.setStatus(id, func(s *Status) { s.Requests++; s.LastRequestAt = &now })
	if out.Queued != nil && m.cfg.Kick != nil {
		m.cfg.Kick()
	}
	return nil
}
