package chaos

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
)

// cluster is one Bindery installation: a state folder, a database, one
// controld and some workerd processes, all real binaries.
type cluster struct {
	name     string
	bin      string // folder with controld and workerd
	state    string // <dir>/state
	db       string
	libRoot  string
	logs     string
	addr     string
	token    string
	lease    time.Duration
	http     *http.Client
	mu       sync.Mutex
	controld *daemon
	workers  map[string]*daemon // slot → current incarnation
	// workerDB and netns place worker slots on other hosts: the database
	// URL a slot's workerd uses (default workerURL, else db) and the
	// network namespace it runs in (default none).
	workerDB  map[string]string
	workerURL string // PostgreSQL: the worker role's URL (usePostgres)
	netns     map[string]string
	gen       map[string]int // slot → incarnations started
	ctlGen    int
}

func newCluster(name, dir, bin, libRoot string, lease time.Duration) (*cluster, error) {
	c := &cluster{name: name, bin: bin, state: filepath.Join(dir, "state"), libRoot: libRoot,
		logs: filepath.Join(dir, "logs"), lease: lease, token: "chaos-" + name + "-token",
		http: &http.Client{Timeout: 30 * time.Second}, workers: map[string]*daemon{}, gen: map[string]int{},
		workerDB: map[string]string{}, netns: map[string]string{}}
	c.db = filepath.Join(c.state, "bindery.db")
	for _, d := range []string{c.state, c.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	c.addr = addr
	return c, nil
}

func (c *cluster) env() []string {
	return []string{"BINDERY_ADMIN_TOKEN=" + c.token, "BINDERY_DB=" + c.db, "BINDERY_STATE_DIR=" + c.state,
		"BINDERY_LIBRARY_ROOT=" + c.libRoot, "BINDERY_LISTEN=" + c.addr}
}

// usePostgres puts the cluster on a PostgreSQL database: controld on
// control, the schema's owner, which `controld migrate --worker-role`
// prepares, and every workerd on worker, the URL of the role it creates.
func (c *cluster) usePostgres(ctx context.Context, control, worker string) error {
	u, err := url.Parse(worker)
	if err != nil || u.User == nil {
		return fmt.Errorf("worker database URL %q names no role", worker)
	}
	c.db, c.workerURL = control, worker
	migrate := exec.CommandContext(ctx, filepath.Join(c.bin, "controld"), "migrate", "--worker-role", u.User.Username())
	migrate.Env = append(os.Environ(), c.env()...)
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("controld migrate: %w\n%s", err, out)
	}
	return nil
}

// startControl starts a controld incarnation and waits for /readyz.
func (c *cluster) startControl(ctx context.Context) error {
	c.mu.Lock()
	c.ctlGen++
	name := fmt.Sprintf("%s-controld-%d", c.name, c.ctlGen)
	c.mu.Unlock()
	d, err := startDaemon(filepath.Join(c.bin, "controld"), name, c.logs, c.env(), "serve", "--shutdown-grace", "5s")
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.controld = d
	c.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !d.alive() {
			return fmt.Errorf("%s exited: %v\n%s", name, d.exitErr(), d.tail(20))
		}
		resp, err := c.http.Get("http://" + c.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready after 30s\n%s", name, d.tail(20))
}

// startWorker starts the next incarnation of worker slot; its worker id
// is unique per incarnation ("<slot>-<n>"), as the default id is.
func (c *cluster) startWorker(slot string) (*daemon, error) {
	c.mu.Lock()
	c.gen[slot]++
	id := fmt.Sprintf("%s-%s-%d", c.name, slot, c.gen[slot])
	c.mu.Unlock()
	env := c.env()
	if u := cmp.Or(c.workerDB[slot], c.workerURL); u != "" {
		env = append(env, "BINDERY_DB="+u) // the later value wins
	}
	bin, args := filepath.Join(c.bin, "workerd"), []string{"run", "--worker-id", id,
		"--lease", c.lease.String(), "--thumbnail-concurrency", "2", "--shutdown-grace", "2s"}
	if ns := c.netns[slot]; ns != "" {
		bin, args = "ip", append([]string{"netns", "exec", ns, bin}, args...)
	}
	d, err := startDaemon(bin, id, c.logs, env, args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.workers[slot] = d
	c.mu.Unlock()
	return d, c.waitRegistered(d)
}

// waitRegistered waits until the worker wrote its workers row: it has
// installed its signal handlers and opened the database, so a fault
// injected from now on hits a running engine, not a starting process.
func (c *cluster) waitRegistered(d *daemon) error {
	ro, err := checks.OpenRO(c.db)
	if err != nil {
		return err
	}
	defer ro.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		if err := ro.QueryRow(`SELECT count(*) FROM workers WHERE worker_id = ?`, d.name).Scan(&n); err == nil && n == 1 {
			return nil
		}
		if !d.alive() {
			return fmt.Errorf("%s exited: %v\n%s", d.name, d.exitErr(), d.tail(20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not register within 60s\n%s\nlocks on the database files:\n%s", d.name, d.tail(20), c.lockHolders())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cluster) worker(slot string) *daemon {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workers[slot]
}

func (c *cluster) control() *daemon {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.controld
}

// stopAll terminates every process gracefully, workers first (so their
// leases are handed back while controld still runs), and reports unclean
// exits.
func (c *cluster) stopAll() error {
	var errs []error
	c.mu.Lock()
	workers := make([]*daemon, 0, len(c.workers))
	for _, w := range c.workers {
		workers = append(workers, w)
	}
	ctl := c.controld
	c.mu.Unlock()
	for _, w := range workers {
		if w.alive() {
			if err := w.terminate(30 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if ctl != nil && ctl.alive() {
		if err := ctl.terminate(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("stop %s: %v", c.name, errs)
	}
	return nil
}

// killAll is the cleanup of a failed run.
func (c *cluster) killAll() {
	c.mu.Lock()
	all := []*daemon{c.controld}
	for _, w := range c.workers {
		all = append(all, w)
	}
	c.mu.Unlock()
	for _, d := range all {
		if d != nil && d.alive() {
			d.kill()
		}
	}
}

// api calls the admin API, retrying while controld is down (it is killed
// on purpose): up to 60 s of connection errors and 5xx answers.
func (c *cluster) api(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+c.addr+"/api/v1"+path, bytes.NewReader(payload))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.http.Do(req)
		var status int
		var text []byte
		if err == nil {
			status = resp.StatusCode
			text, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if status < 300 {
				if out != nil {
					return json.Unmarshal(text, out)
				}
				return nil
			}
			if status < 500 {
				return fmt.Errorf("%s %s: %d %s", method, path, status, text)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s: %v %d %s", method, path, err, status, text)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// setup creates the library and applies the run's settings.
func (c *cluster) setup(ctx context.Context, libPath string, settings map[string]any) (int64, error) {
	if len(settings) > 0 {
		if err := c.api(ctx, http.MethodPatch, "/settings", settings, nil); err != nil {
			return 0, err
		}
	}
	var lib struct {
		ID int64 `json:"id"`
	}
	err := c.api(ctx, http.MethodPost, "/libraries", map[string]any{"name": filepath.Base(libPath), "path": libPath}, &lib)
	return lib.ID, err
}

func (c *cluster) requestScan(ctx context.Context, lib int64) error {
	return c.api(ctx, http.MethodPost, "/jobs", map[string]any{"kind": "scan", "library_id": lib}, nil)
}

// lockHolders lists the POSIX locks held on the database, -wal and -shm
// files (from /proc/locks) with the holding process's command line: what
// to look at when every writer stalls.
func (c *cluster) lockHolders() string {
	inodes := map[string]string{}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		var st syscall.Stat_t
		if err := syscall.Stat(c.db+suffix, &st); err == nil {
			inodes[fmt.Sprintf(":%d ", st.Ino)] = filepath.Base(c.db + suffix)
		}
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, line := range strings.Split(string(locks), "\n") {
		for ino, name := range inodes {
			if !strings.Contains(line+" ", ino) {
				continue
			}
			f := strings.Fields(line)
			cmd := ""
			if len(f) > 4 {
				raw, _ := os.ReadFile("/proc/" + f[4] + "/cmdline")
				cmd = strings.ReplaceAll(string(raw), "\x00", " ")
			}
			fmt.Fprintf(&b, "  %s: %s [%s]\n", name, line, cmd)
		}
	}
	return b.String()
}
