package leases

import (
	"testing"
	"time"

	"github.com/bindery-nas/bindery/protocol"
)

// TestHolderVerdict pins the rule of crashes.go on its edges: a lease of
// 30 s that expired at t0+30 s, judged at now.
func TestHolderVerdict(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) protocol.NullTime {
		return protocol.NullTime{Time: protocol.NewTime(t0.Add(d)), Valid: true}
	}
	none := protocol.NullTime{}
	row := func(registered, lastSeen, stopped protocol.NullTime) staleHolder {
		return staleHolder{ID: 1, Heartbeat: at(0), Expires: at(30 * time.Second),
			Registered: registered, LastSeen: lastSeen, Stopped: stopped}
	}
	const s = time.Second
	for _, c := range []struct {
		name string
		h    staleHolder
		now  time.Duration
		want holderVerdict
	}{
		{"no workers row", row(none, none, none), 31 * s, holderCrashed},
		{"registered again after the last heartbeat", row(at(20*s), at(31*s), none), 31 * s, holderCrashed},
		{"registered before the claim", row(at(-s), at(10*s), none), 31 * s, holderUndecided},
		{"stopped", row(at(-s), at(40*s), at(40*s)), 41 * s, holderLost},
		{"seen after the lease ran out", row(at(-s), at(30*s+time.Millisecond), none), 31 * s, holderLost},
		{"seen exactly at expiry", row(at(-s), at(30*s), none), 31 * s, holderUndecided},
		{"silent for just under three leases", row(at(-s), at(10*s), none), 99*s + 999*time.Millisecond, holderUndecided},
		{"silent for three leases", row(at(-s), at(10*s), none), 100 * s, holderCrashed},
		{"unknown lease: 30 s assumed", staleHolder{Registered: at(-s), LastSeen: at(10 * s)}, 100 * s, holderCrashed},
	} {
		if got := c.h.verdict(t0.Add(c.now)); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, got, c.want)
		}
	}
}
