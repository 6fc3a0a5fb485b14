package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// Build compiles controld and workerd from the module that contains the
// working directory into dir and returns the folder. The daemons are built
// without -race: they are the product as it ships, and the harness runs
// dozens of them.
func Build(ctx context.Context, dir string) error {
	root, err := testutil.ModuleRoot()
	if err != nil {
		return err
	}
	for _, name := range []string{"controld", "workerd"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", name, err, out)
		}
	}
	return nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago; controld keeps it across restarts.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// daemon is one real controld or workerd process incarnation.
type daemon struct {
	name    string // worker id, or "controld-<n>"
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	mu      sync.Mutex
	err     error
	stopped bool // SIGSTOPped and not yet continued
}

// startDaemon starts bin with args, stderr and stdout to logDir/name.log.
func startDaemon(bin, name, logDir string, env []string, args ...string) (*daemon, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		f.Close()
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
		close(d.done)
	}()
	return d, nil
}

func (d *daemon) alive() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// exitErr is the process's exit status once it was reaped.
func (d *daemon) exitErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// kill sends SIGKILL (continuing a stopped process first is unnecessary:
// SIGKILL ends stopped processes too) and waits for the reap.
func (d *daemon) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

func (d *daemon) signal(sig syscall.Signal) error {
	d.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		d.stopped = true
	case syscall.SIGCONT:
		d.stopped = false
	}
	d.mu.Unlock()
	return d.cmd.Process.Signal(sig)
}

// waitStopped waits until every thread of the process is in the stopped
// state (/proc/<pid>/task/*/stat state T): kill(SIGSTOP) returns before the
// target has stopped, and a thread running on the other core can still
// commit a write in between. Where /proc cannot be read it waits 100 ms.
func (d *daemon) waitStopped(timeout time.Duration) error {
	pid := d.cmd.Process.Pid
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := allThreadsStopped(pid)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return nil
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not stopped %v after SIGSTOP", d.name, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func allThreadsStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			return false, err
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false, nil
		}
	}
	return true, nil
}

// terminate sends SIGTERM and waits up to timeout for a clean exit 0.
func (d *daemon) terminate(timeout time.Duration) error {
	if !d.alive() {
		return fmt.Errorf("%s was not running (%v)", d.name, d.exitErr())
	}
	_ = d.cmd.Process.Signal(syscall.SIGCONT)
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if err := d.exitErr(); err != nil {
			return fmt.Errorf("%s exited with %v after SIGTERM", d.name, err)
		}
		return nil
	case <-time.After(timeout):
		d.kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM", d.name, timeout)
	}
}

// logText is the daemon's log so far.
func (d *daemon) logText() string {
	b, _ := os.ReadFile(d.logPath)
	return string(b)
}

// tail is the last n lines of the daemon's log, for failure reports. A
// Go crash dump's tail is only registers and the last goroutines, so when
// the log holds one, its head (the signal or panic and the goroutine that
// raised it) comes first.
func (d *daemon) tail(n int) string {
	lines := strings.Split(strings.TrimRight(d.logText(), "\n"), "\n")
	head := crashHead(lines, 40)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if head != "" {
		return head + "\n[...]\n" + strings.Join(lines, "\n")
	}
	return strings.Join(lines, "\n")
}

// crashHead is up to n lines from the first line that opens a Go crash
// dump (a panic, a fatal error or a signal the runtime took as fatal).
func crashHead(lines []string, n int) string {
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") ||
			(strings.HasPrefix(l, "SIG") && strings.Contains(l, ": ")) {
			return strings.Join(lines[i:min(i+n, len(lines))], "\n")
		}
	}
	return ""
}
