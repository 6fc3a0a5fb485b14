package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of docker-compose.yml the tests assert on.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]*struct {
		Driver     string            `yaml:"driver"`
		DriverOpts map[string]string `yaml:"driver_opts"`
	} `yaml:"volumes"`
}

type composeService struct {
	Image   string            `yaml:"image"`
	Build   map[string]any    `yaml:"build"`
	Command []string          `yaml:"command"`
	Restart string            `yaml:"restart"`
	Scale   string            `yaml:"scale"`
	Stop    string            `yaml:"stop_grace_period"`
	Ports   []string          `yaml:"ports"`
	Env     map[string]string `yaml:"environment"`
	Volumes []struct {
		Type     string `yaml:"type"`
		Source   string `yaml:"source"`
		Target   string `yaml:"target"`
		ReadOnly bool   `yaml:"read_only"`
	} `yaml:"volumes"`
	Healthcheck struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Disable  bool     `yaml:"disable"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

func parseCompose(t *testing.T, data []byte) composeFile {
	t.Helper()
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// interpolation matches ${VAR}, ${VAR:-default} and ${VAR:?message}.
var interpolation = regexp.MustCompile(`\$\{([A-Z0-9_]+)(?::?([-?])([^}]*))?\}`)

// composeDefault is the value compose gives s when no variable is set:
// ${VAR:-x} → x; plain text stays.
func composeDefault(s string) string {
	return interpolation.ReplaceAllStringFunc(s, func(m string) string {
		sub := interpolation.FindStringSubmatch(m)
		if sub[2] == "-" {
			return sub[3]
		}
		return ""
	})
}

// checkCompose asserts the shape issue 9 asks for; it runs on the file as
// written and on docker-compose's normalized `config` output.
func checkCompose(t *testing.T, c composeFile) {
	t.Helper()
	if len(c.Services) != 2 || c.Services["controld"].Image == "" || c.Services["workerd"].Image == "" {
		t.Fatalf("want exactly the services controld and workerd, got %v", slices.Collect(mapKeys(c.Services)))
	}
	ctl, wrk := c.Services["controld"], c.Services["workerd"]
	if ctl.Image != wrk.Image {
		t.Errorf("images differ: %q vs %q", ctl.Image, wrk.Image)
	}
	grace, err := time.ParseDuration(composeDefault(wrk.Env["BINDERY_SHUTDOWN_GRACE"]))
	if err != nil {
		t.Fatalf("workerd BINDERY_SHUTDOWN_GRACE: %v", err)
	}
	for name, s := range c.Services {
		var state, lib bool
		for _, v := range s.Volumes {
			switch v.Target {
			case "/state":
				state = v.Type == "volume" && v.Source == "state" && !v.ReadOnly
			case "/libraries":
				lib = v.Type == "bind" && v.ReadOnly
			}
		}
		if !state || !lib {
			t.Errorf("%s: want the named volume state at /state (rw) and /libraries read-only, got %+v", name, s.Volumes)
		}
		if len(s.Healthcheck.Test) < 2 || s.Healthcheck.Test[0] != "CMD" {
			t.Errorf("%s: healthcheck %v", name, s.Healthcheck.Test)
		}
		if s.Restart != "unless-stopped" {
			t.Errorf("%s: restart %q", name, s.Restart)
		}
		if stop, err := time.ParseDuration(s.Stop); err != nil || stop <= grace {
			t.Errorf("%s: stop_grace_period %q must be longer than workerd's shutdown grace %v", name, s.Stop, grace)
		}
	}
	if got := ctl.Command; !slices.Equal(got, []string{"controld", "serve"}) {
		t.Errorf("controld command %v", got)
	}
	if got := wrk.Command; !slices.Equal(got, []string{"workerd", "run"}) {
		t.Errorf("workerd command %v", got)
	}
	if d, ok := wrk.DependsOn["controld"]; !ok || d.Condition != "service_healthy" {
		t.Errorf("workerd depends_on %+v, want controld: service_healthy", wrk.DependsOn)
	}
	if len(ctl.Ports) != 1 || !strings.Contains(ctl.Ports[0], ":8080") {
		t.Errorf("controld ports %v, want container port 8080 published", ctl.Ports)
	}
	if composeDefault(ctl.Env["BINDERY_LISTEN"]) != "0.0.0.0:8080" {
		t.Errorf("controld must listen on 0.0.0.0:8080 inside the container, got %q", ctl.Env["BINDERY_LISTEN"])
	}
	v, ok := c.Volumes["state"]
	if !ok {
		t.Fatal("no top-level volume state")
	}
	if v != nil && (v.Driver != "" && v.Driver != "local" || len(v.DriverOpts) != 0) {
		t.Errorf("the state volume must be a plain local volume (no NFS/CIFS driver options): %+v", v)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestComposeFile(t *testing.T) {
	raw := readFile(t, deployPath(t, "docker-compose.yml"))
	c := parseCompose(t, []byte(raw))
	checkCompose(t, c)

	t.Run("healthcheck script is the image's", func(t *testing.T) {
		for name, s := range c.Services {
			if s.Healthcheck.Test[1] != "/usr/local/bin/bindery-healthcheck" || s.Healthcheck.Test[2] != name {
				t.Errorf("%s: healthcheck %v, want the image's bindery-healthcheck %s", name, s.Healthcheck.Test, name)
			}
		}
	})

	t.Run(".env.example documents every variable with its default", func(t *testing.T) {
		checkEnvExample(t, raw, ".env.example")
	})
}

// checkEnvExample: the example env file sets every variable the compose
// file raw reads, to its default (or an example value where one is
// required), and nothing else.
func checkEnvExample(t *testing.T, raw, example string) {
	t.Helper()
	vars := parseEnvFile(t, deployPath(t, example))
	seen := map[string]bool{}
	for _, m := range interpolation.FindAllStringSubmatch(raw, -1) {
		name, op, def := m[1], m[2], m[3]
		seen[name] = true
		val, ok := vars[name]
		switch {
		case !ok:
			t.Errorf("%s is used by the compose file but not in %s", name, example)
		case op == "-" && val != def:
			t.Errorf("%s %s=%q, but the compose default is %q", example, name, val, def)
		case op == "?" && val == "":
			t.Errorf("%s must give the required %s an example value", example, name)
		}
	}
	for name := range vars {
		if !seen[name] {
			t.Errorf("%s sets %s, which the compose file never reads", example, name)
		}
	}
}

// TestComposeConfig validates the file with docker-compose itself (Debian's
// docker-compose validates offline, no engine needed) or the docker compose
// plugin, and asserts the shape again on its normalized output.
func TestComposeConfig(t *testing.T) {
	config, emptyEnv := composeConfig(t, "docker-compose.yml")
	library := t.TempDir()

	t.Run("valid", func(t *testing.T) {
		out, code := config(emptyEnv, "BINDERY_LIBRARY_PATH="+library)
		if code != 0 {
			t.Fatalf("config: exit %d\n%s", code, out)
		}
		c := parseCompose(t, []byte(out))
		checkCompose(t, c)
		for name, s := range c.Services {
			for _, v := range s.Volumes {
				if v.Target == "/libraries" && v.Source != library {
					t.Errorf("%s: library source %q, want %q", name, v.Source, library)
				}
			}
		}
		if got := c.Services["workerd"].Env["BINDERY_WORKER_ID"]; got != "workerd-1" {
			t.Errorf("workerd BINDERY_WORKER_ID = %q", got)
		}
	})

	t.Run("example env file gives the defaults", func(t *testing.T) {
		base, code := config(emptyEnv, "BINDERY_LIBRARY_PATH=/volume1/comics")
		if code != 0 {
			t.Fatalf("config: exit %d\n%s", code, base)
		}
		withExample, code := config(deployPath(t, ".env.example"))
		if code != 0 {
			t.Fatalf("config --env-file .env.example: exit %d\n%s", code, withExample)
		}
		if base != withExample {
			t.Errorf(".env.example changes the configuration:\n--- defaults\n%s\n--- .env.example\n%s", base, withExample)
		}
	})

	t.Run("library path is required", func(t *testing.T) {
		out, code := config(emptyEnv)
		if code == 0 || !strings.Contains(out, "BINDERY_LIBRARY_PATH") {
			t.Errorf("config without BINDERY_LIBRARY_PATH: exit %d, %q; want a failure naming it", code, out)
		}
	})
}

// composeConfig returns a function running `config` of the compose file
// with an env file and extra variables (docker-compose, or the docker
// compose plugin), and an empty env file; it skips t when neither tool is
// installed.
func composeConfig(t *testing.T, file string) (config func(envFile string, extra ...string) (string, int), emptyEnv string) {
	t.Helper()
	var tool []string
	if p, err := exec.LookPath("docker-compose"); err == nil {
		tool = []string{p}
	} else if p, err := exec.LookPath("docker"); err == nil && exec.Command(p, "compose", "version").Run() == nil {
		tool = []string{p, "compose"}
	} else {
		t.Skip("neither docker-compose nor the docker compose plugin is installed (Debian package docker-compose; scripts/deps.sh compose): compose validation skipped")
	}
	emptyEnv = filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(emptyEnv, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return func(envFile string, extra ...string) (string, int) {
		args := append(tool[1:], "--env-file", envFile, "-f", deployPath(t, file), "config")
		return run(t, t.TempDir(), extra, tool[0], args...)
	}, emptyEnv
}
