package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/protocol"
)

// TestJudgePicksThisHost: without --worker-id the healthcheck of a scaled
// compose service's container judges that container's own worker (its
// default id begins with the container's host name), not whichever worker
// of the service was seen last.
func TestJudgePicksThisHost(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	seen := func(id string, ago time.Duration, stopped bool) leases.Worker {
		w := leases.Worker{WorkerID: id, LastSeenAt: protocol.NewTime(now.Add(-ago))}
		if stopped {
			w.StoppedAt = protocol.NullTime{Time: w.LastSeenAt, Valid: true}
		}
		return w
	}
	const maxAge = 90 * time.Second
	for _, c := range []struct {
		name     string
		ws       []leases.Worker // most recently seen first, as ListWorkers orders them
		id, host string
		want     string // the worker judged; "" when none is
		healthy  bool
	}{
		{"this host's fresh worker", []leases.Worker{seen("b1c2-7-aa", time.Second, false), seen("a0f3-7-bb", 5*time.Second, false)},
			"", "a0f3", "a0f3-7-bb", true},
		{"this host's stale worker, though another is fresh", []leases.Worker{seen("b1c2-7-aa", time.Second, false), seen("a0f3-7-bb", 5*time.Minute, false)},
			"", "a0f3", "a0f3-7-bb", false},
		{"a restarted container: its new worker, not the killed one", []leases.Worker{seen("a0f3-7-cc", time.Second, false), seen("a0f3-7-bb", 5*time.Minute, false)},
			"", "a0f3", "a0f3-7-cc", true},
		{"this host's worker stopped", []leases.Worker{seen("b1c2-7-aa", time.Second, false), seen("a0f3-7-bb", time.Minute, true)},
			"", "a0f3", "a0f3-7-bb", false},
		{"a prefix of the host name is another host", []leases.Worker{seen("a0f3x-7-aa", time.Minute*5, false), seen("a0f3-7-bb", time.Second, false)},
			"", "a0f3", "a0f3-7-bb", true},
		{"no worker of this host: any running one", []leases.Worker{seen("nas-1", time.Minute, true), seen("nas-2", time.Second, false)},
			"", "box", "nas-2", true},
		{"an explicit id wins over the host", []leases.Worker{seen("a0f3-7-bb", time.Second, false), seen("nas-1", 5*time.Minute, false)},
			"nas-1", "a0f3", "nas-1", false},
		{"an explicit id not registered", []leases.Worker{seen("a0f3-7-bb", time.Second, false)}, "nas-9", "a0f3", "", false},
		{"no worker at all", nil, "", "a0f3", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := pick(c.ws, c.id, c.host)
			if (got == nil) != (c.want == "") || (got != nil && got.WorkerID != c.want) {
				t.Fatalf("picked %+v, want %q", got, c.want)
			}
			msg, err := judge(c.ws, c.id, c.host, now, maxAge)
			if c.healthy != (err == nil) || (err != nil && !errors.Is(err, errUnhealthy)) {
				t.Fatalf("judged %q, %v; want healthy=%v", msg, err, c.healthy)
			}
			if c.want != "" && !strings.Contains(msg+errString(err), c.want) {
				t.Fatalf("the verdict does not name %s: %q %v", c.want, msg, err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
