package feed_test

import (
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/feed"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// silentProxy forwards TCP connections to target until cut, then forwards
// nothing more, either way, on old connections or new ones, and closes
// nothing: a network gone silent, as far as a process without root can
// make one. (The kernel still acknowledges what the proxy does not read,
// so TCP keepalive cannot notice it: only the watcher's health check can.)
type silentProxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newSilentProxy(t *testing.T, target string) *silentProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln, target: target}
	t.Cleanup(p.close)
	go p.serve()
	return p
}

func (p *silentProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.keep(c)
		if p.cut.Load() {
			continue // accepted, never answered
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.keep(up)
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst while the proxy is not cut, and after that reads
// and drops.
func (p *silentProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *silentProxy) keep(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *silentProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestChangeWatcherSilentNetwork: on PostgreSQL, a LISTENing connection
// whose network went silent (nothing arrives, nothing fails) is noticed in
// well under 15 s: the feed's next calls report the error, and once the
// network is back, a change (notifications were missed) and then the
// changes themselves.
func TestChangeWatcherSilentNetwork(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("PostgreSQL only: SQLite's watcher reads data_version on a local connection")
	}
	ctx := context.Background()
	dsn := storetest.MustMigrate(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newSilentProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	control := storetest.MustOpen(t, u.String(), store.RoleControl, nil)
	w, err := feed.New(control).WatchChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if _, err := w.Changed(ctx); err != nil {
		t.Fatal(err)
	}
	p.cut.Store(true)
	cut := time.Now()
	for {
		// The feed calls Changed on its tick (the event interval).
		_, err := w.Changed(ctx)
		if err != nil {
			t.Logf("noticed %v after the cut: %v", time.Since(cut).Round(time.Millisecond), err)
			break
		}
		if time.Since(cut) > 15*time.Second {
			t.Fatalf("the silent connection went unnoticed for %v", time.Since(cut))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if took := time.Since(cut); took > 12*time.Second {
		t.Fatalf("noticed after %v, want within the health check's 10 s (and a tick)", took)
	}
	p.cut.Store(false) // the network is back: new connections go through
	deadline := time.Now().Add(15 * time.Second)
	for {
		changed, err := w.Changed(ctx)
		if err == nil && changed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect after the network came back: changed=%v err=%v", changed, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
