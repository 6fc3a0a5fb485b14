// Package events turns database changes into a stream of events for
// controld's GET /api/v1/events. workerd runs in another process and tells
// controld nothing directly, so the broker polls: PRAGMA data_version on one
// dedicated connection says whether anyone committed since the last look,
// and only then are the rows changed since a watermark read (through
// indexes on updated_at), diffed against what was already sent, and fanned
// out to subscribers.
package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/feed"
	"github.com/bindery-nas/bindery/protocol"
)

// Event types.
const (
	TypeJob       = "job"
	TypeScanError = "scan_error"
	TypeThumbnail = "thumbnail"
)

// Event is one message of the stream.
type Event struct {
	// Seq increases by one per event of this broker (the SSE id).
	Seq  uint64
	Type string
	Data json.RawMessage
}

// Config configures a Broker. Zero values take the documented defaults.
type Config struct {
	// Store is the database. Required.
	Store *store.Store
	// Interval between data_version checks; default 100ms.
	Interval time.Duration
	// Lookback re-reads rows this much older than the watermark, so that a
	// transaction that committed late with an earlier updated_at is not
	// missed; default 5s.
	Lookback time.Duration
	// Buffer is each subscriber's queue; a subscriber that falls this far
	// behind is dropped (its channel closed) rather than slowing the
	// others; default 256.
	Buffer int
	// Logger; default slog.Default().
	Logger *slog.Logger
	// OnChange, when set, is called after each check that found the
	// database changed, subscribers or not: controld wakes its dispatcher
	// with it, so a finished job is followed up within one Interval
	// instead of the dispatcher's own poll.
	OnChange func()
}

// Broker polls the database and fans events out.
type Broker struct {
	cfg Config
	st  *store.Store
	fd  *feed.Store

	mu     sync.Mutex
	subs   map[chan Event]struct{}
	seq    uint64
	ticks  uint64
	polled chan struct{}

	// poller state, touched only by Run's goroutine
	mark      time.Time
	sentJobs  map[int64]time.Time // id → updated_at last sent
	sentThumb map[int64]time.Time
	lastErrID int64
	fresh     bool
}

// New builds a broker; Run starts it.
func New(cfg Config) *Broker {
	if cfg.Interval == 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	if cfg.Lookback == 0 {
		cfg.Lookback = 5 * time.Second
	}
	if cfg.Buffer == 0 {
		cfg.Buffer = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Broker{cfg: cfg, st: cfg.Store, fd: feed.New(cfg.Store), subs: map[chan Event]struct{}{},
		sentJobs: map[int64]time.Time{}, sentThumb: map[int64]time.Time{}, polled: make(chan struct{})}
}

// Subscribe returns a channel of events from now on and a function that
// ends the subscription. The channel is closed when the subscriber falls
// too far behind or the broker stops.
func (b *Broker) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, b.cfg.Buffer)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// Subscribers is the number of open subscriptions.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Polled returns a channel closed after the next completed poll; tests
// wait on it instead of sleeping.
func (b *Broker) Polled() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.polled
}

// Run polls until ctx ends, then closes every subscription.
func (b *Broker) Run(ctx context.Context) error {
	w, err := b.fd.WatchChanges(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	defer b.closeAll()
	if err := b.reset(ctx); err != nil {
		return err
	}
	t := time.NewTicker(b.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		changed, err := w.Changed(ctx)
		if err == nil && changed {
			if b.cfg.OnChange != nil {
				b.cfg.OnChange()
			}
			err = b.poll(ctx)
		}
		if err != nil && ctx.Err() == nil {
			b.cfg.Logger.Warn("events poll failed", "err", err)
		}
		b.mu.Lock()
		close(b.polled)
		b.polled = make(chan struct{})
		b.mu.Unlock()
	}
}

// reset starts the feed at the present: the rows of the lookback window
// count as sent, so a new subscriber hears of changes from now on only.
func (b *Broker) reset(ctx context.Context) error {
	id, err := b.fd.LastScanErrorID(ctx)
	if err != nil {
		return err
	}
	b.lastErrID = id
	b.mark = b.st.Now()
	clear(b.sentJobs)
	clear(b.sentThumb)
	since := protocol.FormatTime(b.mark.Add(-b.cfg.Lookback))
	jobs, err := b.fd.JobsUpdatedSince(ctx, since, batch)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		b.sentJobs[j.ID] = j.UpdatedAt.Time
		b.advance(j.UpdatedAt)
	}
	thumbs, err := b.fd.ThumbnailsSettledSince(ctx, since, batch)
	if err != nil {
		return err
	}
	for _, t := range thumbs {
		b.sentThumb[t.ID] = t.UpdatedAt.Time
		b.advance(t.UpdatedAt)
	}
	return nil
}

func (b *Broker) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}

const batch = 500

func (b *Broker) poll(ctx context.Context) error {
	if b.Subscribers() == 0 {
		// Nobody listens: move the feed to the present instead of
		// diffing rows nobody will see.
		return b.reset(ctx)
	}
	since := protocol.FormatTime(b.mark.Add(-b.cfg.Lookback))
	jobs, err := b.fd.JobsUpdatedSince(ctx, since, batch)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if b.sentJobs[j.ID].Equal(j.UpdatedAt.Time) {
			continue
		}
		b.sentJobs[j.ID] = j.UpdatedAt.Time
		b.advance(j.UpdatedAt)
		b.publish(TypeJob, jobEvent(j))
	}
	thumbs, err := b.fd.ThumbnailsSettledSince(ctx, since, batch)
	if err != nil {
		return err
	}
	for _, t := range thumbs {
		if b.sentThumb[t.ID].Equal(t.UpdatedAt.Time) {
			continue
		}
		b.sentThumb[t.ID] = t.UpdatedAt.Time
		b.advance(t.UpdatedAt)
		b.publish(TypeThumbnail, thumbnailEvent(t))
	}
	errs, err := b.fd.ScanErrorsAfter(ctx, b.lastErrID, batch)
	if err != nil {
		return err
	}
	for _, e := range errs {
		b.lastErrID = e.ID
		b.publish(TypeScanError, scanErrorEvent(e))
	}
	b.prune()
	return nil
}

// advance moves the watermark to the newest updated_at seen.
func (b *Broker) advance(updatedAt protocol.Time) {
	if updatedAt.After(b.mark) {
		b.mark = updatedAt.Time
	}
}

// prune forgets rows older than the lookback window: they are not read
// again, so their last-sent stamps are not needed.
func (b *Broker) prune() {
	floor := b.mark.Add(-b.cfg.Lookback)
	for _, m := range []map[int64]time.Time{b.sentJobs, b.sentThumb} {
		for id, at := range m {
			if at.Before(floor) {
				delete(m, id)
			}
		}
	}
}

func (b *Broker) publish(typ string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev := Event{Seq: b.seq, Type: typ, Data: raw}
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
			delete(b.subs, ch)
			close(ch)
		}
	}
}
