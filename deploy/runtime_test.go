package deploy

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runtimePackages are the Debian packages the Dockerfile's runtime stage
// installs.
func runtimePackages(t *testing.T) []string {
	t.Helper()
	stages, _ := parseDockerfile(t)
	run := stages[len(stages)-1].args("RUN")
	m := regexp.MustCompile(`apt-get install -y --no-install-recommends ([^&]+)`).FindStringSubmatch(run)
	if m == nil {
		t.Fatal("runtime stage has no apt-get install -y --no-install-recommends")
	}
	return strings.Fields(m[1])
}

// TestRuntimeLibraries proves that the runtime stage's packages carry every
// shared library the daemons link: ldd on the binaries built here (Debian
// bookworm, like the builder image), each library mapped to its package by
// dpkg, each package in the dependency closure of the runtime packages.
func TestRuntimeLibraries(t *testing.T) {
	for _, tool := range []string{"ldd", "dpkg", "apt-cache"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: runtime library check skipped (needs a Debian host)", tool)
		}
	}
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
		"--no-breaks", "--no-replaces", "--no-enhances"}, runtimePackages(t)...)
	out, err := exec.Command("apt-cache", args...).Output()
	if err != nil {
		t.Skipf("apt-cache depends: %v (package lists not available)", err)
	}
	closure := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if line != "" && !strings.HasPrefix(line, " ") {
			closure[strings.Trim(line, "<>")] = true
		}
	}
	if !closure["libc6"] || !closure["libvips42"] {
		t.Fatalf("dependency closure of %v lacks libc6 or libvips42", runtimePackages(t))
	}
	bin := binDir(t)
	for _, d := range daemons {
		out, err := exec.Command("ldd", filepath.Join(bin, d.name)).CombinedOutput()
		if err != nil {
			t.Fatalf("ldd %s: %v\n%s", d.name, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "not found") {
				t.Errorf("%s: %s", d.name, strings.TrimSpace(line))
				continue
			}
			lib := libPath(line)
			if lib == "" {
				continue // linux-vdso
			}
			pkg := owningPackage(t, lib)
			if pkg == "" {
				t.Errorf("%s links %s, which no Debian package owns", d.name, lib)
			} else if !closure[pkg] {
				t.Errorf("%s links %s from %s, which the runtime stage does not install", d.name, lib, pkg)
			}
		}
	}
}

// libPath is the resolved library of one ldd line ("" for the vDSO).
func libPath(line string) string {
	f := strings.Fields(line)
	switch {
	case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
		return f[2]
	case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
		return f[0]
	}
	return ""
}

// owningPackage asks dpkg which package ships path (trying the path as
// linked and with symlinks resolved, since /lib is a symlink to /usr/lib).
func owningPackage(t *testing.T, path string) string {
	t.Helper()
	candidates := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		candidates = append(candidates, real, strings.TrimPrefix(real, "/usr"))
	}
	for _, p := range candidates {
		out, err := exec.Command("dpkg", "-S", p).Output()
		if err != nil {
			continue
		}
		pkg, _, _ := strings.Cut(strings.TrimSpace(strings.Split(string(out), "\n")[0]), ":")
		return pkg
	}
	return ""
}
