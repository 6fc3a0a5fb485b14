package deploy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
	line int
}

// stage is the instructions from one FROM to the next.
type stage struct {
	from string // image reference with the global ARG defaults expanded
	name string
	ins  []instruction
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func (s stage) args(cmd string) string {
	var b strings.Builder
	for _, in := range s.all(cmd) {
		b.WriteString(in.args + "\n")
	}
	return b.String()
}

// parseDockerfile splits the Dockerfile into stages. Global ARGs (before the
// first FROM) are expanded in FROM lines, as docker does.
func parseDockerfile(t *testing.T) (stages []stage, globals map[string]string) {
	t.Helper()
	path := deployPath(t, "Dockerfile")
	globals = map[string]string{}
	var ins []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(strings.NewReader(readFile(t, path)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		ins = append(ins, instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	for _, in := range ins {
		switch {
		case in.cmd == "FROM":
			ref, name, _ := strings.Cut(in.args, " AS ")
			stages = append(stages, stage{from: os.Expand(strings.TrimSpace(ref), func(k string) string { return globals[k] }), name: strings.TrimSpace(name)})
		case len(stages) == 0 && in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			globals[k] = v
		case len(stages) == 0:
			t.Fatalf("Dockerfile:%d: %s before the first FROM", in.line, in.cmd)
		default:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	return stages, globals
}

var ldflagsRe = regexp.MustCompile(`-ldflags "([^"]*)"`)

// dockerfileLDFlags is the -ldflags string of the Dockerfile's go build with
// the build ARG name set to value, so the tests build what the image builds.
func dockerfileLDFlags(t *testing.T, name, value string) string {
	t.Helper()
	stages, _ := parseDockerfile(t)
	m := ldflagsRe.FindStringSubmatch(stages[0].args("RUN"))
	if m == nil {
		t.Fatal("Dockerfile: no go build -ldflags \"...\" in the builder stage")
	}
	return strings.ReplaceAll(m[1], "${"+name+"}", value)
}

func TestDockerfile(t *testing.T) {
	stages, globals := parseDockerfile(t)
	if len(stages) != 2 {
		t.Fatalf("want a builder and a runtime stage, got %d stages", len(stages))
	}
	build, rt := stages[0], stages[1]

	t.Run("builder", func(t *testing.T) {
		goMod := readFile(t, filepath.Join(testutil.RepoRoot(t), "go.mod"))
		goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(goMod)
		if goVer == nil || globals["GO_VERSION"] != goVer[1] {
			t.Errorf("GO_VERSION=%q, want go.mod's %v", globals["GO_VERSION"], goVer)
		}
		if !strings.HasPrefix(build.from, "golang:") || !strings.HasSuffix(build.from, "-bookworm") || build.name == "" {
			t.Errorf("builder FROM %q AS %q, want golang:<go>-bookworm AS <name>", build.from, build.name)
		}
		run := build.args("RUN")
		for _, pkg := range []string{"libvips-dev", "pkg-config", "gcc"} {
			if !strings.Contains(run, pkg) {
				t.Errorf("builder does not install %s", pkg)
			}
		}
		for _, want := range []string{"CGO_ENABLED=1", "./cmd/controld", "./cmd/workerd",
			"-X github.com/bindery-nas/bindery/internal/version.Version=${VERSION}"} {
			if !strings.Contains(run, want) {
				t.Errorf("builder go build lacks %q", want)
			}
		}
		if !slices.ContainsFunc(build.all("ARG"), func(in instruction) bool { return strings.HasPrefix(in.args, "VERSION") }) {
			t.Error("builder has no ARG VERSION")
		}
	})

	t.Run("sources copied", func(t *testing.T) {
		root := testutil.RepoRoot(t)
		copied := []string{}
		for _, in := range build.all("COPY") {
			f := strings.Fields(in.args)
			for _, src := range f[:len(f)-1] {
				copied = append(copied, filepath.Join(root, src))
			}
		}
		for _, f := range []string{"go.mod", "go.sum"} {
			if !slices.Contains(copied, filepath.Join(root, f)) {
				t.Errorf("builder does not COPY %s", f)
			}
		}
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}",
			"./cmd/controld", "./cmd/workerd").Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		for _, dir := range strings.Fields(string(out)) {
			if !strings.HasPrefix(dir, root+string(filepath.Separator)) {
				continue // a module dependency: go mod download fetches it
			}
			if !slices.ContainsFunc(copied, func(c string) bool { return strings.HasPrefix(dir+"/", c+"/") }) {
				t.Errorf("package folder %s is imported by the daemons but not COPY'd into the builder", dir)
			}
		}
	})

	t.Run("runtime", func(t *testing.T) {
		if rt.from != "debian:bookworm-slim" {
			t.Errorf("runtime FROM %q, want debian:bookworm-slim (same release as the builder's libvips)", rt.from)
		}
		run := rt.args("RUN")
		for _, pkg := range []string{"libvips42", "ffmpeg", "ca-certificates", "sqlite3"} {
			if !strings.Contains(run, pkg) {
				t.Errorf("runtime does not install %s", pkg)
			}
		}
		if strings.Contains(run, "-dev") {
			t.Error("runtime installs a -dev package")
		}
		args := rt.args("ARG")
		if !strings.Contains(args, "UID=") || !strings.Contains(args, "GID=") {
			t.Errorf("runtime lacks ARG UID/GID: %q", args)
		}
		users := rt.all("USER")
		if len(users) == 0 {
			t.Fatal("runtime has no USER")
		}
		if u := users[len(users)-1].args; u != "${UID}:${GID}" {
			t.Errorf("USER %q, want the build-arg ids ${UID}:${GID}", u)
		}
		copies := rt.args("COPY")
		if !strings.Contains(copies, "--from="+build.name+" /out/controld /out/workerd /usr/local/bin/") {
			t.Errorf("runtime does not copy both binaries from %s: %q", build.name, copies)
		}
		if !strings.Contains(copies, "deploy/healthcheck.sh /usr/local/bin/bindery-healthcheck") {
			t.Error("runtime does not install the health-check script")
		}
		hc := rt.all("HEALTHCHECK")
		if len(hc) != 1 || !strings.Contains(hc[0].args, `CMD ["/usr/local/bin/bindery-healthcheck"]`) {
			t.Errorf("HEALTHCHECK = %v", hc)
		}
		if v := rt.args("VOLUME"); !strings.Contains(v, `"/state"`) {
			t.Errorf("VOLUME %q, want /state", v)
		}
		if e := rt.args("EXPOSE"); strings.TrimSpace(e) != "8080" {
			t.Errorf("EXPOSE %q, want 8080", e)
		}
	})

	t.Run("ldflags stamp the version", func(t *testing.T) {
		dir := binDir(t) // built with dockerfileLDFlags
		for _, d := range daemons {
			out, code := run(t, dir, nil, filepath.Join(dir, d.name), "version")
			if code != 0 || !strings.Contains(out, testVersion) {
				t.Errorf("%s version: exit %d, %q; want %q", d.name, code, out, testVersion)
			}
		}
	})
}

// TestHealthcheckScript runs deploy/healthcheck.sh against a real HTTP
// server standing in for controld's /readyz.
func TestHealthcheckScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	var status atomic.Int32
	var lastPath atomic.Value
	status.Store(http.StatusOK)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastPath.Store(r.URL.Path)
		w.WriteHeader(int(status.Load()))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	script := deployPath(t, "healthcheck.sh")

	check := func(listen string, args ...string) (string, int) {
		return run(t, t.TempDir(), []string{"BINDERY_LISTEN=" + listen}, "bash", append([]string{script}, args...)...)
	}
	t.Run("ready", func(t *testing.T) {
		for _, listen := range []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("0.0.0.0:%d", port), fmt.Sprintf(":%d", port)} {
			out, code := check(listen, "controld")
			if code != 0 {
				t.Errorf("%s: exit %d %q", listen, code, out)
			}
		}
		if p, _ := lastPath.Load().(string); p != "/readyz" {
			t.Errorf("probed %q, want /readyz", p)
		}
	})
	t.Run("not ready", func(t *testing.T) {
		status.Store(http.StatusServiceUnavailable)
		defer status.Store(http.StatusOK)
		out, code := check(fmt.Sprintf("127.0.0.1:%d", port), "controld")
		if code != 1 || !strings.Contains(out, "503") {
			t.Errorf("exit %d %q, want 1 naming 503", code, out)
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := closed.Addr().String()
		closed.Close()
		out, code := check(addr, "controld")
		if code != 1 || !strings.Contains(out, "nothing listens") {
			t.Errorf("exit %d %q", code, out)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		if out, code := check("127.0.0.1:http", "controld"); code != 1 || !strings.Contains(out, "bad listen address") {
			t.Errorf("bad address: exit %d %q", code, out)
		}
		if _, code := check("127.0.0.1:1", "nginx"); code != 64 {
			t.Errorf("unknown role: exit %d, want 64", code)
		}
	})
}
