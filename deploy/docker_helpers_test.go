package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// testLabel marks every container, image and volume the docker tests make
// outside docker-compose (compose marks its own with its project label), and
// e2ePrefix starts every compose project and image name they use, so a run
// killed half-way is swept by the next one.
const (
	testLabel = "org.bindery.test"
	e2ePrefix = "bindery-e2e-"
)

// dockerHost prepares the engine once per test binary: whether it answers,
// the base images of deploy/testdata/mkbase.sh, and a sweep of whatever an
// earlier, killed run left behind.
type dockerHost struct {
	mu    sync.Mutex
	swept bool
	bases map[string]*baseImage
}

// baseImage is one base image, made (or found fresh) once per test binary.
// Each has its own, so a test waiting for the systemd image does not also
// wait for the golang image another test needs.
type baseImage struct {
	once sync.Once
	err  error
}

var host = dockerHost{bases: map[string]*baseImage{}}

// needDocker skips t when no Docker engine answers (saying why), and
// otherwise makes sure the named base images (debian, golang, postgres,
// systemd) exist. Building them needs root (debootstrap); CI runs as root.
// The docker tests call it after t.Parallel, so that their waits for the
// images, built in the background under make test, overlap.
func needDocker(t *testing.T, bases ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("docker tests build images: skipped with -short")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		testutil.SkipUnlessCI(t, "no docker client in PATH: the container tests need a Docker engine")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		testutil.SkipUnlessCI(t, "no Docker engine answers (docker info: %v: %s)", err, bytes.TrimSpace(out))
	}
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "the container tests build their base images with debootstrap and chown library files: run them as root")
	}
	for _, b := range host.prepare(t, bases) {
		if b.err != nil {
			t.Fatal(b.err)
		}
	}
}

// prepare sweeps once, then makes each named base image once.
func (h *dockerHost) prepare(t *testing.T, names []string) []*baseImage {
	t.Helper()
	h.mu.Lock()
	if !h.swept {
		sweepLeftovers(t)
		h.swept = true
	}
	bases := make([]*baseImage, len(names))
	for i, name := range names {
		if h.bases[name] == nil {
			h.bases[name] = &baseImage{}
		}
		bases[i] = h.bases[name]
	}
	h.mu.Unlock()
	for i, b := range bases {
		b.once.Do(func() { b.err = makeBase(deployPath(t, "testdata", "mkbase.sh"), names[i]) })
	}
	return bases
}

// makeBase runs mkbase.sh for one image. The background build of make test
// may be making it, under the load of every other package: 10 minutes was
// seen too short.
func makeBase(script, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, script, name).CombinedOutput(); err != nil {
		return fmt.Errorf("mkbase.sh %s: %v\n%s", name, err, out)
	}
	return nil
}

// sweepLeftovers removes the compose projects, containers and images that a
// killed run of these tests left: every name starting with e2ePrefix, every
// object carrying testLabel.
func sweepLeftovers(t *testing.T) {
	t.Helper()
	projects := map[string]bool{}
	for _, list := range [][]string{
		{"ps", "-a", "--format", `{{.Label "com.docker.compose.project"}}`},
		{"volume", "ls", "--format", `{{.Label "com.docker.compose.project"}}`},
		{"network", "ls", "--format", `{{.Label "com.docker.compose.project"}}`},
	} {
		out, _ := exec.Command("docker", list...).Output()
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, e2ePrefix) {
				projects[p] = true
			}
		}
	}
	for p := range projects {
		t.Logf("sweeping compose project %s left by an earlier run", p)
		composeDown(p, deployPath(t, "docker-compose.yml"))
	}
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+testLabel).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		exec.Command("docker", append([]string{"rm", "-fv"}, ids...)...).Run()
	}
	out, _ = exec.Command("docker", "volume", "ls", "-q", "--filter", "label="+testLabel).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		exec.Command("docker", append([]string{"volume", "rm", "-f"}, ids...)...).Run()
	}
	out, _ = exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}").Output()
	for _, ref := range strings.Fields(string(out)) {
		if strings.HasPrefix(ref, e2ePrefix) {
			exec.Command("docker", "rmi", "-f", ref).Run()
		}
	}
}

// composeDown removes a project's containers, networks and volumes, and
// every image named after it (each test's images are PROJECT:tag). Their
// untagged parents stay (--no-prune): they are the layer cache another
// test's build may be standing on at this moment (a parent removed under
// a running build fails it with "unknown parent image ID"); TestMain
// prunes them once every test is done.
func composeDown(project, file string) {
	cmd := exec.Command("docker-compose", "-p", project, "-f", file, "down", "-v", "--remove-orphans", "-t", "5")
	// The files' required variables must be set for compose to parse them.
	cmd.Env = append(cleanEnv(), "BINDERY_LIBRARY_PATH=/nonexistent", "BINDERY_PG_PASSWORD=x", "BINDERY_WORKER_PASSWORD=x")
	cmd.Run()
	out, _ := exec.Command("docker", "images", "-q", project).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		exec.Command("docker", append([]string{"rmi", "-f", "--no-prune"}, ids...)...).Run()
	}
	// The volumes of services another file declares (a sweep passes
	// docker-compose.yml for every project) are not down's to remove.
	out, _ = exec.Command("docker", "volume", "ls", "-q", "--filter", "label=com.docker.compose.project="+project).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		exec.Command("docker", append([]string{"volume", "rm", "-f"}, ids...)...).Run()
	}
}

// pruneBuildStages removes the untagged images the Dockerfile's build stage
// leaves behind (the classic builder keeps them as its cache), and the
// containers of a failed build step, which the classic builder keeps; both
// inherit the test base image's label.
func pruneBuildStages() {
	if host.swept {
		exec.Command("docker", "container", "prune", "-f", "--filter", "label=org.bindery.testbase").Run()
		exec.Command("docker", "image", "prune", "-f", "--filter", "label=org.bindery.testbase").Run()
	}
}

// composeProject is one `docker-compose -p NAME -f FILE` with its variables.
// It is torn down (containers, networks, volumes, images) when the test ends,
// pass or fail.
type composeProject struct {
	name, file string
	env        map[string]string
}

// newCompose names a project after the test and registers its teardown.
// env holds the variables users put in deploy/.env; BINDERY_IMAGE is set to
// a per-project image so parallel tests never share one.
func newCompose(t *testing.T, file string, env map[string]string) *composeProject {
	t.Helper()
	return newNamedCompose(t, "", file, env)
}

// newNamedCompose is newCompose for a second project of one test.
func newNamedCompose(t *testing.T, suffix, file string, env map[string]string) *composeProject {
	t.Helper()
	name := e2ePrefix + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + suffix
	p := &composeProject{name: name, file: file, env: map[string]string{"BINDERY_IMAGE": name + ":test"}}
	for k, v := range env {
		p.env[k] = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := p.run("logs", "--no-color", "--tail", "60")
			t.Logf("compose logs of %s:\n%s", name, out)
		}
		composeDown(name, file)
	})
	return p
}

func (p *composeProject) environ() []string {
	env := cleanEnv()
	for k, v := range p.env {
		env = append(env, k+"="+v)
	}
	return env
}

// run executes docker-compose with args; the error includes its output.
// An image build shares two cores with the rest of make test (two builds
// at once, over fuse-overlayfs): 10 minutes was measured too short for it.
func (p *composeProject) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", p.name, "-f", p.file}, args...)...)
	cmd.Env = p.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker-compose %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// builds lets one image build run at a time. The end-to-end, PostgreSQL
// and upgrade tests build images whose first layers are the same (the
// first two build the same image). One after the other, each finds the
// layers made before it in the cache. Side by side, each step ran in every
// build, and the cache then held twin layers, so that the next build
// missed from its first COPY on. Three builds at once passed 15 minutes.
var builds sync.Mutex

// upBuild is a user's first start, `up -d --build`. The images are built
// first under builds, so that up's own build finds every layer made and
// the lock is not held while the services start.
func (p *composeProject) upBuild(t *testing.T) {
	t.Helper()
	builds.Lock()
	_, err := p.run("build")
	builds.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	p.must(t, "up", "-d", "--build")
}

func (p *composeProject) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := p.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// exec runs a shell command inside service's running container and returns
// its output and exit code.
func (p *composeProject) exec(t *testing.T, service, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("docker", "exec", p.container(t, service), "bash", "-c", script)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("docker exec %s: %v", service, err)
	}
	return string(out), 0
}

// container is the id of service's container (running or stopped); the
// first replica's when the service is scaled.
func (p *composeProject) container(t *testing.T, service string) string {
	t.Helper()
	return p.containers(t, service)[0]
}

// containers are the ids of every replica of service.
func (p *composeProject) containers(t *testing.T, service string) []string {
	t.Helper()
	ids := strings.Fields(p.must(t, "ps", "-q", service))
	if len(ids) == 0 {
		t.Fatalf("compose project %s has no %s container", p.name, service)
	}
	return ids
}

// containerState is the part of `docker inspect` the tests read.
type containerState struct {
	Status     string
	ExitCode   int
	StartedAt  time.Time
	FinishedAt time.Time
	Health     *struct{ Status string }
}

func inspectState(t *testing.T, id string) containerState {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", "{{json .State}}", id).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", id, err)
	}
	var s containerState
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("docker inspect %s: %v", id, err)
	}
	return s
}

// waitHealthy waits until every service's container reports healthy, the
// state docker derives from the image's own HEALTHCHECK as compose set it.
func (p *composeProject) waitHealthy(t *testing.T, services ...string) {
	t.Helper()
	for _, svc := range services {
		for _, id := range p.containers(t, svc) {
			waitFor(t, svc+" healthy", 4*time.Minute, func() bool {
				s := inspectState(t, id)
				if s.Status == "exited" || s.Status == "dead" {
					t.Fatalf("%s exited with %d before it was healthy", svc, s.ExitCode)
				}
				return s.Health != nil && s.Health.Status == "healthy"
			})
		}
	}
}

// token reads the admin token controld wrote into the state volume.
func (p *composeProject) token(t *testing.T) string {
	t.Helper()
	out, code := p.exec(t, "controld", "cat /state/admin.token")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("admin token from the state volume: exit %d: %s", code, out)
	}
	return strings.TrimSpace(out)
}

// treeSums maps every regular file under root to its size and SHA-256, to
// prove that nothing in a library was written.
func treeSums(t *testing.T, root string) map[string]string {
	t.Helper()
	out, err := exec.Command("bash", "-c", `cd "$1" && find . -type f -print0 | sort -z | xargs -0r sha256sum`, "sums", root).Output()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if sum, path, ok := strings.Cut(line, "  "); ok {
			sums[path] = sum
		}
	}
	return sums
}

// chownTree gives root and everything under it to uid:gid with group-only
// access (dirs 0750, files 0640), as a NAS share often is.
func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o640)
		if d.IsDir() {
			mode = 0o750
		}
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// stopwatch logs how long each phase of a long test took, for the run time
// budget of make test.
func stopwatch(t *testing.T) func(phase string) {
	last := time.Now()
	return func(phase string) {
		t.Helper()
		t.Logf("%-40s %5.1fs", phase, time.Since(last).Seconds())
		last = time.Now()
	}
}
