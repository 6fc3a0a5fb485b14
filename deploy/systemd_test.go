package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// unitFile is a parsed systemd unit: section → key → every assignment in
// order. An empty assignment ("CapabilityBoundingSet=") is kept as "": in
// systemd it resets the list, which is how an empty set is written.
type unitFile map[string]map[string][]string

// parseUnit reads the INI dialect of systemd.syntax(7): [Section] headers,
// Key=Value lines, # and ; comments, backslash line continuations.
func parseUnit(path string) (unitFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := unitFile{}
	section := ""
	var pending string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line, pending = pending+" "+line, ""
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: bad section header %q", path, n, line)
			}
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			key, val, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("%s:%d: want Key=Value inside a section, got %q", path, n, line)
			}
			key = strings.TrimSpace(key)
			u[section][key] = append(u[section][key], strings.TrimSpace(val))
		}
	}
	return u, sc.Err()
}

// last is the effective value of a single-valued key ("" when absent).
func (u unitFile) last(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// expectService fails t for every [Service] key whose effective value is
// not the wanted one.
func (u unitFile) expectService(t *testing.T, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := u.last("Service", k); got != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
}

// list is the effective value of a list key: the words assigned since the
// last empty assignment.
func (u unitFile) list(section, key string) []string {
	var out []string
	for _, v := range u[section][key] {
		if v == "" {
			out = nil
			continue
		}
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// parseEnvFile reads an EnvironmentFile: KEY=value lines and comments.
func parseEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for n, line := range strings.Split(readFile(t, path), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			t.Fatalf("%s:%d: want KEY=value, got %q", path, n+1, line)
		}
		env[k] = v
	}
	return env
}

var daemons = []struct{ name, unit, sub string }{
	{"controld", "bindery-controld.service", "serve"},
	{"workerd", "bindery-workerd.service", "run"},
}

func TestSystemdUnits(t *testing.T) {
	env := parseEnvFile(t, deployPath(t, "systemd", "bindery.env.example"))
	state, library := env["BINDERY_STATE_DIR"], env["BINDERY_LIBRARY_ROOT"]
	grace, err := time.ParseDuration(env["BINDERY_SHUTDOWN_GRACE"])
	if err != nil {
		t.Fatalf("bindery.env.example: BINDERY_SHUTDOWN_GRACE: %v", err)
	}

	t.Run("env file", func(t *testing.T) {
		if !filepath.IsAbs(state) || !filepath.IsAbs(library) {
			t.Fatalf("state dir %q and library root %q must be absolute", state, library)
		}
		if db := env["BINDERY_DB"]; filepath.Dir(db) != state {
			t.Errorf("BINDERY_DB=%q must sit directly in the state dir %q (ReadWritePaths covers only it)", db, state)
		}
		for k := range env {
			if !strings.HasPrefix(k, "BINDERY_") {
				t.Errorf("unexpected variable %s", k)
			}
		}
	})

	for _, d := range daemons {
		t.Run(d.unit, func(t *testing.T) {
			u, err := parseUnit(deployPath(t, "systemd", d.unit))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"NoNewPrivileges":       "yes",
				"ProtectSystem":         "strict",
				"PrivateTmp":            "yes",
				"ProtectHome":           "yes",
				"PrivateDevices":        "yes",
				"RestrictSUIDSGID":      "yes",
				"LockPersonality":       "yes",
				"Restart":               "on-failure",
				"Type":                  "simple",
				"EnvironmentFile":       "/etc/bindery/bindery.env",
				"ProtectKernelTunables": "yes",
			}
			u.expectService(t, want)
			if got := u.list("Service", "ReadWritePaths"); !slices.Equal(got, []string{state}) {
				t.Errorf("ReadWritePaths=%v, want exactly the state dir %s", got, state)
			}
			ro := u.list("Service", "ReadOnlyPaths")
			if !slices.Contains(ro, library) && !slices.Contains(ro, "-"+library) {
				t.Errorf("ReadOnlyPaths=%v, want the library root %s", ro, library)
			}
			if got := u.list("Service", "RestrictAddressFamilies"); !sameSet(got, []string{"AF_UNIX", "AF_INET", "AF_INET6"}) {
				t.Errorf("RestrictAddressFamilies=%v", got)
			}
			if vals := u["Service"]["CapabilityBoundingSet"]; len(vals) == 0 || len(u.list("Service", "CapabilityBoundingSet")) != 0 {
				t.Errorf("CapabilityBoundingSet=%q, want present and empty", vals)
			}
			if user := u.last("Service", "User"); user == "" || user == "root" || user == "0" {
				t.Errorf("User=%q, want a dedicated user", user)
			}
			stop, ok := parseSystemdDuration(u.last("Service", "TimeoutStopSec"))
			if !ok || stop <= grace {
				t.Errorf("TimeoutStopSec=%q must be longer than the shutdown grace %v", u.last("Service", "TimeoutStopSec"), grace)
			}
			exec := strings.Fields(u.last("Service", "ExecStart"))
			if len(exec) < 2 || exec[0] != "/usr/local/bin/"+d.name || exec[1] != d.sub {
				t.Errorf("ExecStart=%q, want /usr/local/bin/%s %s", exec, d.name, d.sub)
			}
			if !slices.Contains(u.list("Unit", "PartOf"), "bindery.target") ||
				!slices.Contains(u.list("Install", "WantedBy"), "bindery.target") {
				t.Error("want PartOf= and WantedBy= bindery.target")
			}
			if mounts := u.list("Unit", "RequiresMountsFor"); !slices.Contains(mounts, state) || !slices.Contains(mounts, library) {
				t.Errorf("RequiresMountsFor=%v, want %s and %s", mounts, state, library)
			}
		})
	}

	t.Run("workerd after controld", func(t *testing.T) {
		u, err := parseUnit(deployPath(t, "systemd", "bindery-workerd.service"))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"After", "Wants"} {
			if !slices.Contains(u.list("Unit", k), "bindery-controld.service") {
				t.Errorf("%s= must name bindery-controld.service, got %v", k, u.list("Unit", k))
			}
		}
		// Requires= would stop workerd whenever controld restarts.
		if slices.Contains(u.list("Unit", "Requires"), "bindery-controld.service") {
			t.Error("workerd must not Require= controld")
		}
	})

	t.Run("target", func(t *testing.T) {
		u, err := parseUnit(deployPath(t, "systemd", "bindery.target"))
		if err != nil {
			t.Fatal(err)
		}
		if got := u.list("Unit", "Wants"); !sameSet(got, []string{"bindery-controld.service", "bindery-workerd.service"}) {
			t.Errorf("bindery.target Wants=%v", got)
		}
		if !slices.Contains(u.list("Install", "WantedBy"), "multi-user.target") {
			t.Error("bindery.target must be WantedBy=multi-user.target")
		}
	})
}

func TestParseUnit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.service")
	body := "# c\n[Service]\nCapabilityBoundingSet=CAP_A\nCapabilityBoundingSet=\nExecStart=/bin/a \\\n  --b\n; c\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.list("Service", "CapabilityBoundingSet"); len(got) != 0 {
		t.Errorf("reset list = %v", got)
	}
	if got := u.last("Service", "ExecStart"); got != "/bin/a  --b" && got != "/bin/a --b" {
		t.Errorf("continued ExecStart = %q", got)
	}
	if err := os.WriteFile(path, []byte("Key=outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parseUnit(path); err == nil {
		t.Error("a key outside any section must be refused")
	}
}

// TestSystemdAnalyzeVerify installs into a staging root with install.sh and
// runs systemd-analyze verify on the installed units, their ExecStart paths
// pointed at the staged binaries (verify fails when a binary is missing).
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd; scripts/deps.sh systemd): unit verification skipped")
	}
	stage := stagedInstall(t, nil)
	verify := t.TempDir()
	var units []string
	for _, name := range []string{"bindery-controld.service", "bindery-workerd.service", "bindery.target"} {
		body := readFile(t, filepath.Join(stage, "etc/systemd/system", name))
		body = strings.ReplaceAll(body, "ExecStart=/usr/local/bin/", "ExecStart="+stage+"/usr/local/bin/")
		dst := filepath.Join(verify, name)
		if err := os.WriteFile(dst, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, dst)
	}
	out, code := run(t, verify, nil, analyze, append([]string{"verify", "--man=no"}, units...)...)
	if code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("systemd-analyze verify: exit %d\n%s", code, out)
	}

	t.Run("catches a missing binary", func(t *testing.T) {
		if err := os.Remove(filepath.Join(stage, "usr/local/bin/workerd")); err != nil {
			t.Fatal(err)
		}
		out, code := run(t, verify, nil, analyze, "verify", "--man=no", units[1])
		if code == 0 || !strings.Contains(out, "workerd") {
			t.Fatalf("verify with workerd missing: exit %d\n%s", code, out)
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
