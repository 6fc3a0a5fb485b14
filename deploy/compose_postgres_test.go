package deploy

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkComposePostgres asserts the shape of docker-compose.postgres.yml,
// on the file as written and on docker-compose's normalized output: one
// Bindery image for migrate, controld and workerd; migrate runs once per
// `up` as the schema's owner, after PostgreSQL is healthy and before
// controld; workerd connects as the worker role, with no id of its own so
// that it scales; no password sits in a URL.
func checkComposePostgres(t *testing.T, c composeFile) {
	t.Helper()
	names := slices.Sorted(maps.Keys(c.Services))
	if !slices.Equal(names, []string{"controld", "migrate", "postgres", "workerd"}) {
		t.Fatalf("services %v, want controld, migrate, postgres and workerd", names)
	}
	pg, mig, ctl, wrk := c.Services["postgres"], c.Services["migrate"], c.Services["controld"], c.Services["workerd"]
	if mig.Image != ctl.Image || wrk.Image != ctl.Image || ctl.Image == "" {
		t.Errorf("images %q, %q, %q: want one Bindery image", mig.Image, ctl.Image, wrk.Image)
	}
	if !slices.Equal(mig.Command, []string{"controld", "migrate", "--worker-role", "bindery_worker"}) || mig.Restart != "no" {
		t.Errorf("migrate: command %v, restart %q; want a one-shot controld migrate --worker-role", mig.Command, mig.Restart)
	}
	if !mig.Healthcheck.Disable && !slices.Equal(mig.Healthcheck.Test, []string{"NONE"}) {
		t.Errorf("migrate: the image's healthcheck is not disabled: %+v", mig.Healthcheck)
	}
	for svc, dep := range map[string][2]string{
		"migrate":  {"postgres", "service_healthy"},
		"controld": {"migrate", "service_completed_successfully"},
		"workerd":  {"controld", "service_healthy"},
	} {
		if d, ok := c.Services[svc].DependsOn[dep[0]]; !ok || d.Condition != dep[1] {
			t.Errorf("%s depends_on %+v, want %s: %s", svc, c.Services[svc].DependsOn, dep[0], dep[1])
		}
	}
	for svc, role := range map[string]string{"migrate": "bindery", "controld": "bindery", "workerd": "bindery_worker"} {
		env := c.Services[svc].Env
		u, err := url.Parse(composeDefault(env["BINDERY_DB"]))
		if err != nil || u.Scheme != "postgres" || u.User.Username() != role {
			t.Errorf("%s: BINDERY_DB %q, want a postgres:// URL as %s", svc, env["BINDERY_DB"], role)
		} else if _, set := u.User.Password(); set {
			t.Errorf("%s: BINDERY_DB holds a password: give it in PGPASSWORD", svc)
		}
		if env["PGPASSWORD"] == "" {
			t.Errorf("%s: no PGPASSWORD", svc)
		}
	}
	if ctl.Env["PGPASSWORD"] != pg.Env["POSTGRES_PASSWORD"] || wrk.Env["PGPASSWORD"] != mig.Env["BINDERY_WORKER_PASSWORD"] {
		t.Errorf("the owner's and the worker's passwords do not match between services")
	}
	if _, ok := wrk.Env["BINDERY_WORKER_ID"]; ok {
		t.Errorf("workerd sets BINDERY_WORKER_ID: its replicas would share one id")
	}
	if len(pg.Volumes) != 1 || pg.Volumes[0].Source != "pgdata" || pg.Volumes[0].Target != "/var/lib/postgresql/data" {
		t.Errorf("postgres volumes %+v, want pgdata at its data folder", pg.Volumes)
	}
	if len(pg.Ports) != 0 {
		t.Errorf("postgres publishes %v: the database must not be on the LAN by default", pg.Ports)
	}
	grace, err := time.ParseDuration(composeDefault(wrk.Env["BINDERY_SHUTDOWN_GRACE"]))
	if err != nil {
		t.Fatalf("workerd BINDERY_SHUTDOWN_GRACE: %v", err)
	}
	for _, svc := range []string{"postgres", "controld", "workerd"} {
		s := c.Services[svc]
		if stop, err := time.ParseDuration(s.Stop); err != nil || stop <= grace || s.Restart != "unless-stopped" {
			t.Errorf("%s: stop_grace_period %q (want over %v), restart %q", svc, s.Stop, grace, s.Restart)
		}
	}
	for _, name := range []string{"state", "pgdata"} {
		if v, ok := c.Volumes[name]; !ok || v != nil && (v.Driver != "" && v.Driver != "local" || len(v.DriverOpts) != 0) {
			t.Errorf("volume %s: %+v, want a plain local volume", name, v)
		}
	}
}

// TestComposePostgresFile checks docker-compose.postgres.yml as written,
// its example env file, and docker-compose's reading of it, with the bad
// forms a user meets first: a required variable left unset.
func TestComposePostgresFile(t *testing.T) {
	const file = "docker-compose.postgres.yml"
	raw := readFile(t, deployPath(t, file))
	checkComposePostgres(t, parseCompose(t, []byte(raw)))
	t.Run(".env.postgres.example documents every variable with its default", func(t *testing.T) {
		checkEnvExample(t, raw, ".env.postgres.example")
	})

	config, emptyEnv := composeConfig(t, file)
	required := map[string]string{
		"BINDERY_LIBRARY_PATH":    t.TempDir(),
		"BINDERY_PG_PASSWORD":     "owner secret",
		"BINDERY_WORKER_PASSWORD": "worker secret",
	}
	vars := func(except string) []string {
		var out []string
		for k, v := range required {
			if k != except {
				out = append(out, k+"="+v)
			}
		}
		return out
	}
	t.Run("valid", func(t *testing.T) {
		out, code := config(emptyEnv, vars("")...)
		if code != 0 {
			t.Fatalf("config: exit %d\n%s", code, out)
		}
		c := parseCompose(t, []byte(out))
		checkComposePostgres(t, c)
		if got := c.Services["workerd"].Scale; got != "2" {
			t.Errorf("workerd scale %q, want 2 replicas by default", got)
		}
	})
	t.Run("example env file gives the defaults", func(t *testing.T) {
		example := parseEnvFile(t, deployPath(t, ".env.postgres.example"))
		for k := range required {
			required[k] = example[k]
		}
		base, code := config(emptyEnv, vars("")...)
		withExample, code2 := config(deployPath(t, ".env.postgres.example"))
		if code != 0 || code2 != 0 || base != withExample {
			t.Errorf(".env.postgres.example changes the configuration (exit %d, %d):\n--- defaults\n%s\n--- .env.postgres.example\n%s", code, code2, base, withExample)
		}
	})
	for name := range required {
		t.Run(name+" is required", func(t *testing.T) {
			if out, code := config(emptyEnv, vars(name)...); code == 0 || !strings.Contains(out, name) {
				t.Errorf("config without %s: exit %d, %q; want a failure naming it", name, code, out)
			}
		})
	}
}

// TestComposePostgres runs docker-compose.postgres.yml as a user past one
// host would: `up -d --build` with three workerd replicas, passwords with
// quotes in them, the Synology ids. The migrate service must succeed
// before controld starts; every replica must register and be healthy on
// its own row; a library's scan, duplicate groups and covers must complete
// through them; workerd must be connected as the worker role, whose
// password logs in and whose forbidden writes PostgreSQL refuses; and the
// index must survive `down` and `up`, with migrate run again.
func TestComposePostgres(t *testing.T) {
	t.Parallel()
	needDocker(t, "debian", "golang", "postgres")
	root := filepath.Join(t.TempDir(), "libraries")
	want := composeLibrary(t, root, "comics", 150)
	chownTree(t, root, nasUID, nasGID)
	before := treeSums(t, root)
	groups, inGroups := duplicateGroups(before)
	port := strings.Split(freeAddr(t), ":")[1]
	const replicas = 3
	workerPassword := `it's a "worker" password`
	p := newCompose(t, deployPath(t, "docker-compose.postgres.yml"), map[string]string{
		"BINDERY_LIBRARY_PATH":    root,
		"BINDERY_UID":             strconv.Itoa(nasUID),
		"BINDERY_GID":             strconv.Itoa(nasGID),
		"BINDERY_VERSION":         "e2e", // the end-to-end test's image, from the layer cache
		"BINDERY_HTTP_BIND":       "127.0.0.1",
		"BINDERY_HTTP_PORT":       port,
		"BINDERY_PG_PASSWORD":     "owner's password",
		"BINDERY_WORKER_PASSWORD": workerPassword,
		"BINDERY_WORKERS":         strconv.Itoa(replicas),
	})
	lap := stopwatch(t)
	p.upBuild(t)
	p.waitHealthy(t, "postgres", "controld", "workerd")
	lap("up, every service healthy")
	checkMigrated(t, p)
	c := apiClient{base: "http://127.0.0.1:" + port, token: p.token(t)}
	if hosts := liveWorkerHosts(t, c); len(hosts) != replicas {
		t.Errorf("live workers on hosts %v, want one on each of %d replicas", hosts, replicas)
	}
	comics := createLibrary(t, c, "comics")
	scan(t, c, comics)
	expectFiles(t, c, comics, want)
	waitGroups(t, c, groups, inGroups)
	waitCovers(t, c, want)
	lap("library indexed")
	checkWorkerRole(t, p, workerPassword, replicas)

	p.must(t, "down")
	p.must(t, "up", "-d")
	p.waitHealthy(t, "controld") // workerd's health was checked above
	checkMigrated(t, p)
	expectFiles(t, c, comics, want)
	waitGroups(t, c, groups, inGroups)
	lap("down and up")
	if after := treeSums(t, root); !maps.Equal(before, after) {
		t.Errorf("the library changed: %d files before, %d after", len(before), len(after))
	}
}

// checkMigrated: the migrate service ran to completion (exit 0).
func checkMigrated(t *testing.T, p *composeProject) {
	t.Helper()
	if s := inspectState(t, p.container(t, "migrate")); s.Status != "exited" || s.ExitCode != 0 {
		t.Fatalf("migrate: %s, exit %d", s.Status, s.ExitCode)
	}
}

// liveWorkerHosts lists the hosts of the live workers (GET /workers).
func liveWorkerHosts(t *testing.T, c apiClient) []string {
	t.Helper()
	var ws struct {
		Items []struct {
			Host string
			Live bool
		}
	}
	c.mustDoJSON(t, "GET", "/workers", "", 200, &ws)
	hosts := map[string]bool{}
	for _, w := range ws.Items {
		if w.Live {
			hosts[w.Host] = true
		}
	}
	return slices.Sorted(maps.Keys(hosts))
}

// checkWorkerRole looks from the postgres container: every replica holds
// connections as bindery_worker; that role logs in over TCP with the
// password from the env file (and not without it), and PostgreSQL refuses
// it a write outside workerd's whitelist.
func checkWorkerRole(t *testing.T, p *composeProject, password string, replicas int) {
	t.Helper()
	var hosts string
	waitFor(t, "every replica connected as bindery_worker", 30*time.Second, func() bool {
		out, code := p.exec(t, "postgres", `psql -U bindery -d bindery -Atc "SELECT count(DISTINCT client_addr) FROM pg_stat_activity WHERE usename = 'bindery_worker'"`)
		hosts = strings.TrimSpace(out)
		return code == 0 && hosts == strconv.Itoa(replicas)
	})
	asWorker := func(pw, sql string) (string, int) {
		return p.exec(t, "postgres", fmt.Sprintf(`PGPASSWORD=%s psql -h 127.0.0.1 -U bindery_worker -d bindery -Atc %s`,
			shellQuote(pw), shellQuote(sql)))
	}
	if out, code := asWorker(password, "SELECT current_user"); code != 0 || strings.TrimSpace(out) != "bindery_worker" {
		t.Errorf("the worker role with its password: exit %d: %s", code, out)
	}
	if out, code := asWorker("wrong", "SELECT 1"); code == 0 || !strings.Contains(out, "password authentication failed") {
		t.Errorf("the worker role with a wrong password: exit %d: %s", code, out)
	}
	if out, code := asWorker(password, "UPDATE jobs SET kind = 'hash'"); code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("the worker role rewrote jobs.kind: exit %d: %s", code, out)
	}
}

// shellQuote is s in single quotes for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
