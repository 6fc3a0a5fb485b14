package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// stagedInstall runs install.sh into a fresh DESTDIR with the built binaries
// and extra variables, and returns the DESTDIR.
func stagedInstall(t *testing.T, extra []string) string {
	t.Helper()
	bin := binDir(t)
	stage := t.TempDir()
	env := append([]string{"DESTDIR=" + stage, "BIN_SRC=" + bin}, extra...)
	out, code := run(t, testutil.RepoRoot(t), env, "bash", deployPath(t, "install.sh"))
	if code != 0 {
		t.Fatalf("install.sh: exit %d\n%s", code, out)
	}
	return stage
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestInstallScript(t *testing.T) {
	t.Run("default layout", func(t *testing.T) {
		stage := stagedInstall(t, nil)
		want := map[string]os.FileMode{
			"usr/local/bin/controld":                      0o755,
			"usr/local/bin/workerd":                       0o755,
			"usr/local/bin/bindery-healthcheck":           0o755,
			"etc/systemd/system/bindery-controld.service": 0o644,
			"etc/systemd/system/bindery-workerd.service":  0o644,
			"etc/systemd/system/bindery.target":           0o644,
			"etc/bindery/bindery.env":                     0o640,
			"etc/bindery/bindery.env.example":             0o644,
			"usr/local/share/doc/bindery/OPERATIONS.md":   0o644,
		}
		for rel, m := range want {
			if got := mode(t, filepath.Join(stage, rel)).Perm(); got != m {
				t.Errorf("%s: mode %o, want %o", rel, got, m)
			}
		}
		if fi := mode(t, filepath.Join(stage, "var/lib/bindery")); !fi.IsDir() || fi.Perm() != 0o750 {
			t.Errorf("state dir mode %v, want drwxr-x---", fi)
		}
		// The staged units are the shipped ones: default paths unchanged.
		for _, unit := range []string{"bindery-controld.service", "bindery-workerd.service", "bindery.target"} {
			got := readFile(t, filepath.Join(stage, "etc/systemd/system", unit))
			if got != readFile(t, deployPath(t, "systemd", unit)) {
				t.Errorf("%s: default install changed the unit", unit)
			}
		}
		out, code := run(t, stage, nil, filepath.Join(stage, "usr/local/bin/controld"), "version")
		if code != 0 || !strings.Contains(out, testVersion) {
			t.Errorf("installed controld version: exit %d, %q", code, out)
		}
	})

	t.Run("keeps an existing env file", func(t *testing.T) {
		stage := stagedInstall(t, nil)
		envPath := filepath.Join(stage, "etc/bindery/bindery.env")
		mine := "BINDERY_LISTEN=0.0.0.0:9999\n"
		if err := os.WriteFile(envPath, []byte(mine), 0o640); err != nil {
			t.Fatal(err)
		}
		out, code := run(t, testutil.RepoRoot(t), []string{"DESTDIR=" + stage, "BIN_SRC=" + binDir(t)}, "bash", deployPath(t, "install.sh"))
		if code != 0 {
			t.Fatalf("second install: exit %d\n%s", code, out)
		}
		if got := readFile(t, envPath); got != mine {
			t.Errorf("install.sh overwrote bindery.env: %q", got)
		}
		if !strings.Contains(out, "kept existing") {
			t.Errorf("install.sh did not say it kept the env file:\n%s", out)
		}
	})

	t.Run("custom paths are rewritten", func(t *testing.T) {
		stage := stagedInstall(t, []string{
			"PREFIX=/opt/bindery", "SYSCONFDIR=/etc/opt", "STATEDIR=/data/bindery-state",
			"LIBRARY_ROOT=/mnt/comics", "BINDERY_USER=comics", "UNITDIR=/usr/lib/systemd/system",
		})
		u, err := parseUnit(filepath.Join(stage, "usr/lib/systemd/system/bindery-workerd.service"))
		if err != nil {
			t.Fatal(err)
		}
		checks := map[string]string{
			"ExecStart":       "/opt/bindery/bin/workerd run",
			"EnvironmentFile": "/etc/opt/bindery/bindery.env",
			"ReadWritePaths":  "/data/bindery-state",
			"ReadOnlyPaths":   "-/mnt/comics",
			"User":            "comics",
			"Group":           "comics",
		}
		u.expectService(t, checks)
		env := parseEnvFile(t, filepath.Join(stage, "etc/opt/bindery/bindery.env"))
		if env["BINDERY_DB"] != "/data/bindery-state/bindery.db" || env["BINDERY_LIBRARY_ROOT"] != "/mnt/comics" {
			t.Errorf("env file not rewritten: %v", env)
		}
		for _, p := range []string{"opt/bindery/bin/controld", "data/bindery-state"} {
			if _, err := os.Stat(filepath.Join(stage, p)); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("refuses bad input", func(t *testing.T) {
		cases := []struct {
			env  []string
			want string
		}{
			{[]string{"PREFIX=relative/path"}, "absolute"},
			{[]string{"STATEDIR=/var/lib/my state"}, "must not contain"},
			{[]string{"BINDERY_USER=Root;rm"}, "lowercase"},
			{[]string{"BIN_SRC=" + t.TempDir()}, "make build"},
		}
		for _, c := range cases {
			stage := t.TempDir()
			env := append([]string{"DESTDIR=" + stage, "BIN_SRC=" + binDir(t)}, c.env...)
			out, code := run(t, testutil.RepoRoot(t), env, "bash", deployPath(t, "install.sh"))
			if code == 0 || !strings.Contains(out, c.want) {
				t.Errorf("%v: exit %d, output %q, want an error naming %q", c.env, code, out, c.want)
			}
			entries, _ := os.ReadDir(stage)
			if len(entries) != 0 {
				t.Errorf("%v: refused install still wrote %d entries", c.env, len(entries))
			}
		}
	})
}
