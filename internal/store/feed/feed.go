// Package feed is what controld's event feed and the engine's wake-ups
// read: change detection, and the rows changed since the last look.
package feed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Change detection for controld's event feed. workerd runs in another
// process, so controld cannot be told of progress directly. On SQLite it
// polls, and polling stays cheap because PRAGMA data_version, read on one
// dedicated connection, changes only when another connection committed. On
// PostgreSQL, where workers sit on other hosts, triggers NOTIFY
// bindery_changes and the watcher LISTENs on a connection of its own. Only
// then are the rows updated since the last look read, through indexes on
// updated_at.

// changesChannel is the channel the PostgreSQL schema's triggers notify.
const changesChannel = "bindery_changes"

// ChangeWatcher holds the dedicated connection that learns of commits.
type ChangeWatcher struct {
	conn *sql.Conn // SQLite: data_version is per connection
	last int64
	pg   *pgx.Conn // PostgreSQL: the LISTENing connection
	url  string    // PostgreSQL: how to connect it again
	// alive is when the LISTENing connection last proved it reaches the
	// server (connected, a notification, a health check answered).
	alive time.Time
}

// WatchChanges takes a dedicated connection for a watcher. Close gives it
// back.
func (s *Store) WatchChanges(ctx context.Context) (*ChangeWatcher, error) {
	if s.db.Postgres {
		return s.listenChanges(ctx)
	}
	conn, err := s.db.R.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch changes: %w", err)
	}
	w := &ChangeWatcher{conn: conn}
	if w.last, err = w.version(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return w, nil
}

func (s *Store) listenChanges(ctx context.Context) (*ChangeWatcher, error) {
	if s.db.ListenURL == "" {
		return nil, errors.New("watch changes: no URL to LISTEN on")
	}
	w := &ChangeWatcher{url: s.db.ListenURL}
	if err := w.listen(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// listen (re)connects the LISTENing connection.
func (w *ChangeWatcher) listen(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	cfg, err := pgx.ParseConfig(w.url)
	if err != nil {
		return fmt.Errorf("watch changes: %w", err)
	}
	cfg.DialFunc = listenDialer().DialContext
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("watch changes: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		conn.Close(ctx)
		return fmt.Errorf("watch changes: %w", err)
	}
	w.pg, w.alive = conn, time.Now()
	return nil
}

// A LISTENing connection only reads, so a network that goes silent (a
// cable pulled, a host cut off, a firewall that drops the flow) leaves it
// waiting for notifications that never come: nothing is sent, so nothing
// fails, until TCP keepalive gives up (15 s idle and 9 probes 15 s apart
// under Go's and Linux's defaults: about 150 s), and the feed misses every
// change meanwhile. Two guards bound that to listenHealthEvery +
// listenHealthTimeout (10 s):
//
//   - a health check: a connection that proved nothing for
//     listenHealthEvery is pinged (an empty query) with a deadline of
//     listenHealthTimeout; no answer closes it, and the next call connects
//     again and reports a change (notifications were missed);
//   - the socket itself gives up sooner: keepalive probes after
//     listenKeepAlive idle, listenKeepAliveProbes of them listenKeepAlive
//     apart, and (Linux) TCP_USER_TIMEOUT, so that data left unacknowledged,
//     such as that ping, fails the connection too instead of being sent
//     again for minutes.
const (
	listenHealthEvery     = 5 * time.Second
	listenHealthTimeout   = 5 * time.Second
	listenKeepAlive       = 2 * time.Second
	listenKeepAliveProbes = 3
	listenUserTimeout     = 10 * time.Second
)

// listenDialer dials the LISTENing connection with the keepalive and user
// timeout above.
func listenDialer() *net.Dialer {
	return &net.Dialer{
		Timeout: listenTimeout,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: listenKeepAlive,
			Interval: listenKeepAlive, Count: listenKeepAliveProbes},
		Control: func(network, _ string, c syscall.RawConn) error {
			if !strings.HasPrefix(network, "tcp") {
				return nil
			}
			return setUserTimeout(c, listenUserTimeout)
		},
	}
}

func (w *ChangeWatcher) version(ctx context.Context) (int64, error) {
	var v int64
	if err := w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("data version: %w", err)
	}
	return v, nil
}

// Changed reports whether any other connection committed since the last
// call (or since WatchChanges).
func (w *ChangeWatcher) Changed(ctx context.Context) (bool, error) {
	if w.pg != nil {
		return w.notified(ctx)
	}
	v, err := w.version(ctx)
	if err != nil {
		return false, err
	}
	changed := v != w.last
	w.last = v
	return changed, nil
}

// listenTimeout bounds one attempt to connect the LISTENing connection, so
// that a server behind a cut network does not hold the feed's loop.
const listenTimeout = 10 * time.Second

// notifyPoll is how long Changed waits for a notification that has not
// arrived; the feed calls it on its own tick.
const notifyPoll = 5 * time.Millisecond

// notified drains the notifications received since the last call. A
// connection lost (the server restarted, the network failed) is connected
// again on the next call, which reports a change: notifications sent
// meanwhile were missed, so the feed must look.
func (w *ChangeWatcher) notified(ctx context.Context) (bool, error) {
	if w.pg.IsClosed() {
		if err := w.listen(ctx); err != nil {
			return false, err
		}
		return true, nil
	}
	changed := false
	for {
		wait, cancel := context.WithTimeout(ctx, notifyPoll)
		_, err := w.pg.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			changed, w.alive = true, time.Now()
		case ctx.Err() != nil:
			return changed, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
			return changed, w.checkHealth(ctx)
		default:
			w.drop() // the next call connects again
			return changed, fmt.Errorf("watch changes: %w", err)
		}
	}
}

// checkHealth pings the LISTENing connection when it proved nothing for
// listenHealthEvery, and drops it when the ping gets no answer in time.
func (w *ChangeWatcher) checkHealth(ctx context.Context) error {
	if time.Since(w.alive) < listenHealthEvery {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, listenHealthTimeout)
	defer cancel()
	if err := w.pg.Ping(pctx); err != nil {
		w.drop()
		return fmt.Errorf("watch changes: health check: %w", err)
	}
	w.alive = time.Now()
	return nil
}

// drop closes the LISTENing connection without waiting on a network that
// may be gone.
func (w *ChangeWatcher) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	w.pg.Close(ctx)
}

// Close gives the connection back.
func (w *ChangeWatcher) Close() error {
	if w.pg != nil {
		return w.pg.Close(context.Background())
	}
	return w.conn.Close()
}

// JobsUpdatedSince returns up to limit jobs whose updated_at >= since,
// oldest change first.
func (s *Store) JobsUpdatedSince(ctx context.Context, since string, limit int) ([]model.Job, error) {
	var out []model.Job
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+sqldb.JobCols+` FROM jobs
		WHERE updated_at >= ? ORDER BY updated_at, id LIMIT ?`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("jobs updated since: %w", err)
	}
	return out, nil
}

// ThumbnailsSettledSince returns up to limit thumbnail rows that became
// ready or failed with updated_at >= since, oldest change first.
func (s *Store) ThumbnailsSettledSince(ctx context.Context, since string, limit int) ([]model.Thumbnail, error) {
	var out []model.Thumbnail
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+sqldb.ThumbnailCols+` FROM thumbnails
		WHERE updated_at >= ? AND status IN ('ready','failed') ORDER BY updated_at, id LIMIT ?`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("thumbnails settled since: %w", err)
	}
	return out, nil
}

// ScanErrorsAfter returns up to limit scan errors with id > afterID, with
// the library of their session.
func (s *Store) ScanErrorsAfter(ctx context.Context, afterID int64, limit int) ([]ScanErrorEvent, error) {
	var out []ScanErrorEvent
	err := s.db.R.SelectContext(ctx, &out, `SELECT e.id, e.session_id, e.relative_path, e.error_code, e.message,
			s.library_id, s.job_id
		FROM scan_errors e JOIN scan_sessions s ON s.id = e.session_id
		WHERE e.id > ? ORDER BY e.id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("scan errors after: %w", err)
	}
	return out, nil
}

// ScanErrorEvent is a scan error with its session's library and job.
type ScanErrorEvent struct {
	ID           int64  `db:"id"`
	SessionID    int64  `db:"session_id"`
	RelativePath string `db:"relative_path"`
	ErrorCode    string `db:"error_code"`
	Message      string `db:"message"`
	LibraryID    int64  `db:"library_id"`
	JobID        *int64 `db:"job_id"`
}

// LastScanErrorID is the newest scan error id, 0 when there is none; the
// event feed starts after it.
func (s *Store) LastScanErrorID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := s.db.R.QueryRowContext(ctx, `SELECT max(id) FROM scan_errors`).Scan(&id); err != nil {
		return 0, fmt.Errorf("last scan error: %w", err)
	}
	return id.Int64, nil
}

// Store reads the feed of one open database.
type Store struct{ db *sqldb.DB }

// New returns the feed of st's database.
func New(st *store.Store) *Store { return &Store{db: sqldb.Of(st)} }
