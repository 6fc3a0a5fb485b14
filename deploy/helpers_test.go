package deploy

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/pgtest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// testVersion is stamped into the binaries the tests build, with the
// Dockerfile's own -ldflags, so a test can prove the stamping works.
const testVersion = "deploy-test-1.2.3"

// deployPath is a file under deploy/.
func deployPath(t *testing.T, elem ...string) string {
	return filepath.Join(append([]string{testutil.RepoRoot(t), "deploy"}, elem...)...)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// binaries builds controld and workerd once per test binary, with the
// ldflags the Dockerfile uses, into a folder that lives as long as the run.
// No -trimpath (unlike the image): the compile actions then match `make
// build`'s and come from the build cache.
type binaries struct {
	once sync.Once
	dir  string
	err  error
	out  string
}

var built binaries // one build shared by the tests of this package

// binDir returns the folder holding the built controld and workerd.
func binDir(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go toolchain not in PATH: cannot build the daemons")
	}
	root := testutil.RepoRoot(t)
	ldflags := dockerfileLDFlags(t, "VERSION", testVersion)
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "bindery-deploy-bin-")
		if built.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// Two attempts: on this shared machine a concurrent go command
		// trimming the build cache can fail one build spuriously; a real
		// compile error fails both.
		for attempt := 0; attempt < 2; attempt++ {
			cmd := exec.CommandContext(ctx, goBin, "build", "-ldflags", ldflags,
				"-o", built.dir+string(os.PathSeparator), "./cmd/controld", "./cmd/workerd")
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			built.out, built.err = string(out), err
			if err == nil {
				break
			}
		}
	})
	if built.err != nil {
		t.Fatalf("build daemons: %v\n%s", built.err, built.out)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	flag.Parse()
	raiseParallel(dockerTests)
	code := m.Run()
	pgtest.StopShared()
	pruneBuildStages()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// run executes name with args in dir and an environment without any
// BINDERY_ variable (plus extra), returning combined output and exit code.
func run(t *testing.T, dir string, extra []string, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		}
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out.String(), 0
}

// cleanEnv is the test process's environment minus BINDERY_* and COMPOSE_*,
// so neither the developer's shell nor a CI variable changes what a daemon's
// --help prints or what docker-compose interpolates.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "BINDERY_") || strings.HasPrefix(kv, "COMPOSE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// parseSystemdDuration reads a systemd time span ("30s", "1min 30s", "90").
func parseSystemdDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, true
	}
	var total time.Duration
	for _, f := range strings.Fields(s) {
		f = strings.Replace(f, "min", "m", 1)
		d, err := time.ParseDuration(f)
		if err != nil {
			return 0, false
		}
		total += d
	}
	return total, s != ""
}

// dockerTests is how many container tests there are. They call t.Parallel
// and spend most of their time waiting: for base images built in the
// background, on health-check intervals, on containers. At go test's
// default of GOMAXPROCS (two here) they waited for each other's waits.
const dockerTests = 4

// raiseParallel lets n parallel tests run at once unless -parallel was
// given.
func raiseParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur < n {
			_ = f.Value.Set(strconv.Itoa(n))
		}
	}
}
