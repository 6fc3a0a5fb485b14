package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// netHost is a test host: a network namespace joined to this one by a veth
// pair, with its own address. The namespace shares the file system, as an
// NFS mount of the library and state would make it on a real host.
type netHost struct {
	ns   string // network namespace name
	link string // the pair's end in this namespace: setting it down cuts the host off
	addr string // the host's address
	gw   string // this namespace's address on the link: where the host reaches the database
}

// newNetHosts makes n hosts on private /30 links 10.<k>.<i>.0, k taken from
// the process id so that two test binaries do not meet. It skips when the
// test cannot make namespaces (not root, no iproute2).
func newNetHosts(t *testing.T, n int) (hosts []*netHost, subnet string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testutil.SkipUnlessCI(t, "iproute2's ip is not installed")
	}
	pid := os.Getpid()
	k := 100 + pid%100
	for i := 1; i <= n; i++ {
		h := &netHost{ns: fmt.Sprintf("bindery-%d-h%d", pid, i), link: fmt.Sprintf("bv%dh%d", pid%100000, i),
			addr: fmt.Sprintf("10.%d.%d.2", k, i), gw: fmt.Sprintf("10.%d.%d.1", k, i)}
		peer := h.link + "p"
		if out, err := ipCmd("netns", "add", h.ns); err != nil {
			testutil.SkipUnlessCI(t, "cannot make a network namespace: %v %s", err, out)
		}
		t.Cleanup(func() {
			_, _ = ipCmd("link", "del", h.link)
			_, _ = ipCmd("netns", "del", h.ns)
		})
		for _, args := range [][]string{
			{"link", "add", h.link, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", h.ns},
			{"addr", "add", h.gw + "/30", "dev", h.link},
			{"link", "set", h.link, "up"},
			{"-n", h.ns, "addr", "add", h.addr + "/30", "dev", peer},
			{"-n", h.ns, "link", "set", peer, "up"},
			{"-n", h.ns, "link", "set", "lo", "up"},
		} {
			if out, err := ipCmd(args...); err != nil {
				t.Fatalf("ip %s: %v %s", strings.Join(args, " "), err, out)
			}
		}
		hosts = append(hosts, h)
	}
	return hosts, fmt.Sprintf("10.%d.0.0/16", k)
}

// cut takes the host's link down: its packets are lost, its connections
// hang, as when a NAS head's cable is pulled.
func (h *netHost) cut(t *testing.T) { h.setLink(t, "down") }

// restore brings the link back.
func (h *netHost) restore(t *testing.T) { h.setLink(t, "up") }

func (h *netHost) setLink(t *testing.T, state string) {
	t.Helper()
	if out, err := ipCmd("link", "set", h.link, state); err != nil {
		t.Fatalf("ip link set %s %s: %v %s", h.link, state, err, out)
	}
}

func ipCmd(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return string(out), err
}
