package deploy

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemon is a started controld or workerd process.
type daemon struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan error
}

// startAsUnit starts the ExecStart of the installed unit with the installed
// environment file, as systemd would, its binary taken from bin.
func startAsUnit(t *testing.T, stage, bin, unit string, env []string) *daemon {
	t.Helper()
	u, err := parseUnit(filepath.Join(stage, "etc/systemd/system", unit))
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Fields(u.last("Service", "ExecStart"))
	return startProcess(t, env, filepath.Join(bin, filepath.Base(argv[0])), argv[1:]...)
}

// stop sends SIGTERM and waits up to the units' TimeoutStopSec for exit 0.
func (d *daemon) stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("%s after SIGTERM: %v\n%s", d.cmd.Path, err, d.out)
		}
	case <-time.After(timeout):
		t.Fatalf("%s still running %v after SIGTERM\n%s", d.cmd.Path, timeout, d.out)
	}
}

// waitHealthy polls bindery-healthcheck ROLE until it passes or the daemon
// exits; the condition is the script's verdict, not elapsed time.
func waitHealthy(t *testing.T, d *daemon, env []string, role string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, code := runEnv(t, env, "bash", deployPath(t, "healthcheck.sh"), role)
		if code == 0 {
			return
		}
		select {
		case err := <-d.done:
			t.Fatalf("%s exited before it was healthy: %v\n%s", role, err, d.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy after 30s: %s\n%s", role, out, d.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runEnv runs a command with exactly env.
func runEnv(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestDaemonsRunAsUnits starts controld and workerd exactly as the
// installed units would (ExecStart, EnvironmentFile with install.sh's
// paths), gates workerd on controld's health as compose does, checks both
// health probes, scans a generated library through the admin API, and stops
// both with SIGTERM within TimeoutStopSec.
func TestDaemonsRunAsUnits(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	bin := binDir(t)
	root := t.TempDir()
	state, library := filepath.Join(root, "state"), filepath.Join(root, "library")
	for _, dir := range []string{state, library} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	stage := stagedInstall(t, []string{"STATEDIR=" + state, "LIBRARY_ROOT=" + library})
	env := cleanEnv()
	for k, v := range parseEnvFile(t, filepath.Join(stage, "etc/bindery/bindery.env")) {
		env = append(env, k+"="+v)
	}
	addr := freeAddr(t)
	env = append(env, "BINDERY_LISTEN="+addr, "PATH="+bin+":"+os.Getenv("PATH"))
	u, err := parseUnit(filepath.Join(stage, "etc/systemd/system/bindery-workerd.service"))
	if err != nil {
		t.Fatal(err)
	}
	stopTimeout, _ := parseSystemdDuration(u.last("Service", "TimeoutStopSec"))

	ctl := startAsUnit(t, stage, bin, "bindery-controld.service", env)
	waitHealthy(t, ctl, env, "controld")

	if fi, err := os.Stat(filepath.Join(state, "admin.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin token in the state dir: %v %v, want mode 0600", fi, err)
	}
	if _, err := os.Stat(filepath.Join(state, "bindery.db")); err != nil {
		t.Errorf("database not in the state dir: %v", err)
	}
	if out, code := runEnv(t, env, "bash", deployPath(t, "healthcheck.sh"), "workerd"); code == 0 {
		t.Errorf("workerd healthcheck passed with no worker running: %s", out)
	}

	wrk := startAsUnit(t, stage, bin, "bindery-workerd.service", env)
	waitHealthy(t, wrk, env, "workerd")

	scanThroughAPI(t, addr, state, library)
	token, err := os.ReadFile(filepath.Join(state, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	client := apiClient{base: "http://" + addr, token: strings.TrimSpace(string(token))}
	foldersThroughAPI(t, client, library)
	videosThroughAPI(t, client, library)
	resolveThroughAPI(t, client, library)
	sameBookThroughAPI(t, client, library)

	wrk.stop(t, stopTimeout)
	if out, code := runEnv(t, env, "bash", deployPath(t, "healthcheck.sh"), "workerd"); code == 0 {
		t.Errorf("workerd healthcheck passed after the worker stopped: %s", out)
	}
	ctl.stop(t, stopTimeout)
}
