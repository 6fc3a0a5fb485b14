package deploy

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	envNameRe   = regexp.MustCompile(`BINDERY_[A-Z0-9_]+`)
	helpEnvRe   = regexp.MustCompile(`\(env (BINDERY_[A-Z0-9_]+)`)
	helpDefault = regexp.MustCompile(`\(default (.*)\)\s*$`)
)

// helpDefaults runs `<daemon> <sub> --help` with no BINDERY_ variable set
// and returns every variable the help names, with the default printed on
// the flag line that reads it ("" when none is printed).
func helpDefaults(t *testing.T, daemon string, sub ...string) map[string]string {
	t.Helper()
	dir := binDir(t)
	out, code := run(t, dir, nil, filepath.Join(dir, daemon), append(sub, "--help")...)
	if code != 0 {
		t.Fatalf("%s %v --help: exit %d\n%s", daemon, sub, code, out)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		for _, name := range envNameRe.FindAllString(line, -1) {
			if _, ok := vars[name]; !ok {
				vars[name] = ""
			}
		}
		env, def := helpEnvRe.FindStringSubmatch(line), helpDefault.FindStringSubmatch(line)
		if env != nil && def != nil {
			vars[env[1]] = strings.Trim(def[1], `"[]`)
		}
	}
	return vars
}

// sameValue compares two defaults, as durations when both are durations.
func sameValue(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	if errA == nil && errB == nil {
		return da == db
	}
	return a == b
}

// TestDefaultsMatchBinaries keeps one source of truth for defaults: the
// daemons' flags. Every variable the deploy files set must be one a daemon
// reads, and every default they spell out must be the daemon's own.
func TestDefaultsMatchBinaries(t *testing.T) {
	ctl := helpDefaults(t, "controld", "serve")
	wrk := helpDefaults(t, "workerd", "run")
	for k, v := range helpDefaults(t, "workerd", "healthcheck") {
		if _, ok := wrk[k]; !ok {
			wrk[k] = v
		}
	}
	known := func(name string) bool {
		_, a := ctl[name]
		_, b := wrk[name]
		return a || b
	}

	for _, file := range []string{"docker-compose.yml", "docker-compose.postgres.yml"} {
		t.Run(file, func(t *testing.T) { composeDefaults(t, file, ctl, wrk) })
	}

	t.Run("dockerfile env", func(t *testing.T) {
		stages, _ := parseDockerfile(t)
		env := strings.Fields(stages[len(stages)-1].args("ENV"))
		if len(env) == 0 {
			t.Fatal("runtime stage sets no ENV")
		}
		for _, kv := range env {
			name, val, _ := strings.Cut(kv, "=")
			if !known(name) {
				t.Errorf("Dockerfile ENV %s is read by neither daemon", name)
				continue
			}
			if name == "BINDERY_LISTEN" {
				continue
			}
			for _, help := range []map[string]string{ctl, wrk} {
				if want := help[name]; want != "" && !sameValue(val, want) {
					t.Errorf("Dockerfile ENV %s=%s, binary default %q", name, val, want)
				}
			}
		}
	})

	t.Run("systemd env file", func(t *testing.T) {
		for name := range parseEnvFile(t, deployPath(t, "systemd", "bindery.env.example")) {
			if !known(name) {
				t.Errorf("bindery.env.example sets %s, which neither daemon reads", name)
			}
		}
	})
}

// composeDefaults: every variable the compose file gives controld and
// workerd is one the daemon reads, with the daemon's default. PGPASSWORD
// is read by the PostgreSQL driver, not by a flag.
func composeDefaults(t *testing.T, file string, ctl, wrk map[string]string) {
	c := parseCompose(t, []byte(readFile(t, deployPath(t, file))))
	for svc, help := range map[string]map[string]string{"controld": ctl, "workerd": wrk} {
		for name, val := range c.Services[svc].Env {
			want, ok := help[name]
			if name == "PGPASSWORD" {
				continue
			}
			if !ok {
				t.Errorf("%s: %s is not read by %s", svc, name, svc)
				continue
			}
			got := composeDefault(val)
			if name == "BINDERY_LISTEN" || strings.HasPrefix(got, "postgres://") || got == "" || want == "" {
				continue // deliberately different, or the daemon's default
			}
			if !sameValue(got, want) {
				t.Errorf("%s: %s defaults to %q in %s but %q in the binary", svc, name, got, file, want)
			}
		}
	}
}
