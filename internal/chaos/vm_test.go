package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// A skewed host is a QEMU virtual machine: the one way to give a process
// on this machine a wall clock of its own. CLOCK_REALTIME belongs to the
// kernel (time namespaces offset only the monotonic and boot clocks), and
// Go reads it through the vDSO, past any LD_PRELOAD clock. The guest runs
// under software emulation (no KVM is needed), boots a kernel and an
// initramfs holding workerd (testdata/mkvm.sh), takes its clock from the
// real-time clock QEMU gives it (-rtc base=…, minutes off), and reaches
// this machine's loopback, where PostgreSQL listens, as 10.0.2.2 through
// QEMU's user-mode network.

// vmHostAddr is this machine's loopback as the guest sees it.
const vmHostAddr = "10.0.2.2"

// vmKit is what a virtual machine boots: a kernel and an initramfs, made
// with modules from the kernel's module folder.
type vmKit struct {
	kernel, modules, initrd string
}

// newVMKit skips the test unless QEMU, busybox and a kernel with its
// modules are installed (scripts/deps.sh installs them).
func newVMKit(t *testing.T) *vmKit {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the virtual machine is x86-64 Linux")
	}
	for _, tool := range []string{"qemu-system-x86_64", "busybox", "ldd"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.SkipUnlessCI(t, "%s is not installed (scripts/deps.sh installs it)", tool)
		}
	}
	kernel, modules := guestKernel()
	if kernel == "" {
		testutil.SkipUnlessCI(t, "no kernel with its modules in %s or /boot (scripts/deps.sh vm unpacks one)", vmKernelDir())
	}
	return &vmKit{kernel: kernel, modules: modules}
}

// makeInitrd makes the initramfs around the workerd binary
// (testdata/mkvm.sh).
func (k *vmKit) makeInitrd(t *testing.T, ctx context.Context, workerd string) {
	t.Helper()
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	start := time.Now()
	mk := exec.CommandContext(ctx, filepath.Join(root, "internal", "chaos", "testdata", "mkvm.sh"), k.modules, workerd, out)
	if b, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("mkvm.sh: %v\n%s", err, b)
	}
	k.initrd = filepath.Join(out, "initrd")
	t.Logf("initramfs for kernel %s made in %v", filepath.Base(k.modules), time.Since(start).Round(time.Millisecond))
}

// vmKernelDir is where scripts/deps.sh vm unpacks Debian's cloud kernel
// (boot/ and lib/modules/ below it).
func vmKernelDir() string {
	if dir := os.Getenv("BINDERY_VM_KERNEL_DIR"); dir != "" {
		return dir
	}
	return "/var/cache/bindery/vm-kernel"
}

// guestKernel finds a kernel this user can read with its modules, in
// vmKernelDir or else this machine's own, preferring a cloud kernel (fewer
// drivers probe at boot, which is slow under emulation). It returns the
// kernel's path and its module folder, or "".
func guestKernel() (kernel, modules string) {
	for _, root := range []string{vmKernelDir(), "/"} {
		paths, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
		sort.SliceStable(paths, func(i, j int) bool {
			return strings.Contains(paths[i], "-cloud-") && !strings.Contains(paths[j], "-cloud-")
		})
		for _, p := range paths {
			mods := filepath.Join(root, "lib", "modules", strings.TrimPrefix(filepath.Base(p), "vmlinuz-"))
			if _, err := os.Stat(filepath.Join(mods, "modules.dep")); err != nil {
				continue
			}
			if f, err := os.Open(p); err == nil {
				f.Close()
				return p, mods
			}
		}
	}
	return "", ""
}

// vm is one running guest whose workerd has the id name.
type vm struct {
	*daemon // QEMU; its name is the guest workerd's id, its log the console
}

// startVM boots a guest whose wall clock is skew off this machine's and
// whose workerd runs with env (BINDERY_* variables; the kernel hands its
// command line's NAME=value words to init as its environment).
func startVM(kit *vmKit, name, logDir string, skew time.Duration, env map[string]string) (*vm, error) {
	words := []string{"console=ttyS0", "quiet", "panic=-1", "BINDERY_WORKER_ID=" + name}
	for k, v := range env {
		if strings.ContainsAny(k+v, " \"") {
			return nil, fmt.Errorf("kernel command line word %s=%s has a space or quote", k, v)
		}
		words = append(words, k+"="+v)
	}
	// The RTC starts at base and runs on with this machine's clock: the
	// guest reads it at boot (CONFIG_RTC_HCTOSYS), seconds later.
	base := time.Now().Add(skew).UTC().Format("2006-01-02T15:04:05")
	d, err := startDaemon("qemu-system-x86_64", name, logDir, nil,
		"-machine", "q35,accel=tcg", "-cpu", "max", "-smp", "1", "-m", "1024",
		"-nodefaults", "-no-reboot", "-display", "none", "-monitor", "none", "-serial", "stdio",
		"-kernel", kit.kernel, "-initrd", kit.initrd, "-append", strings.Join(words, " "),
		"-rtc", "base="+base,
		// romfile=: no PXE boot ROM, the kernel is given.
		"-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0,romfile=")
	if err != nil {
		return nil, err
	}
	return &vm{daemon: d}, nil
}

var guestClockLine = regexp.MustCompile(`bindery-vm: clock (\d+)`)

// guestSkew waits for the guest to print its wall clock and returns how
// far it is from this machine's when the line was read: the proof that
// the guest's clock is really off (to within the poll and the clock's
// one-second steps).
func (v *vm) guestSkew(timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		if m := guestClockLine.FindStringSubmatch(v.logText()); m != nil {
			now := time.Now()
			sec, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return 0, err
			}
			return time.Unix(sec, 0).Sub(now), nil
		}
		if !v.alive() {
			return 0, fmt.Errorf("%s exited before printing its clock: %v\n%s", v.name, v.exitErr(), v.tail(20))
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s printed no clock within %v\n%s", v.name, timeout, v.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// buildTestDaemons builds controld, and workerd with the test executors
// (cmd/workerd/testexec.go), into dir.
func buildTestDaemons(ctx context.Context, dir string) error {
	root, err := testutil.ModuleRoot()
	if err != nil {
		return err
	}
	for _, args := range [][]string{
		{"build", "-o", filepath.Join(dir, "controld"), "./cmd/controld"},
		{"build", "-tags", "bindery_testexec", "-o", filepath.Join(dir, "workerd"), "./cmd/workerd"},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}
