package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// upgradeFrom is the release the upgrade starts from: the last commit of
// the first wave (schema 8), so the upgrade runs every migration since,
// the Go ones (sort keys, canonical times) included.
const upgradeFrom = "e970756e26a57edd4b582576f494c86d5f1f96ab"

// TestComposeUpgradeAndBackup follows docs/OPERATIONS.md §4 and §5 with
// real images: the old release indexes a library, this tree replaces it
// with `up -d --build` on the same state volume (migrations run once; data,
// covers and the token are kept), an online backup is taken through
// `docker-compose exec` while workerd renders covers, and the backup,
// restored into a fresh volume, passes PRAGMA integrity_check and serves.
func TestComposeUpgradeAndBackup(t *testing.T) {
	t.Parallel()
	needDocker(t, "debian", "golang")
	repo := testutil.RepoRoot(t)
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", upgradeFrom+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this clone (a shallow clone?): no release to upgrade from", upgradeFrom[:7])
	}
	tmp := t.TempDir()
	old := filepath.Join(tmp, "old")
	if out, err := exec.Command("bash", "-c", `mkdir -p "$2" && git -C "$1" archive "$3" | tar -x -C "$2"`,
		"archive", repo, old, upgradeFrom).CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", upgradeFrom[:7], err, out)
	}
	root := filepath.Join(tmp, "libraries")
	want := composeLibrary(t, root, "comics", 60)
	composeLibrary(t, root, "bulk", 600)
	// The ids of the end-to-end test: this tree's image is then the one it
	// built, from the layer cache.
	chownTree(t, root, nasUID, nasGID)
	groups, inGroups := duplicateGroups(treeSums(t, filepath.Join(root, "comics")))
	port := strings.Split(freeAddr(t), ":")[1]
	env := map[string]string{
		"BINDERY_LIBRARY_PATH": root,
		"BINDERY_UID":          strconv.Itoa(nasUID),
		"BINDERY_GID":          strconv.Itoa(nasGID),
		"BINDERY_HTTP_BIND":    "127.0.0.1",
		"BINDERY_HTTP_PORT":    port,
	}

	// Only controld's health is awaited (workerd starts once it is healthy):
	// the end-to-end test checks workerd's, and here the work it finishes
	// proves it runs.
	lap := stopwatch(t)
	// The old release, built from its own Dockerfile and compose file.
	oldFile := filepath.Join(old, "deploy", "docker-compose.yml")
	p := newCompose(t, oldFile, env)
	p.release(t, lap, oldFile, "old")
	c := apiClient{base: "http://127.0.0.1:" + port, token: p.token(t)}
	comics := createLibrary(t, c, "comics")
	scan(t, c, comics)
	waitGroups(t, c, groups, inGroups)
	waitCovers(t, c, want)
	cover := fetchCover(t, c, comics)
	fromSchema := schemaVersion(t, p)
	lap("old release indexed the library")

	// The upgrade: this tree's compose file, same project, same volume.
	p.release(t, lap, deployPath(t, "docker-compose.yml"), "new")
	if out, _ := p.exec(t, "controld", "controld version"); !strings.Contains(out, "controld new") {
		t.Fatalf("controld after the upgrade: %s", out)
	}
	if tok := p.token(t); tok != c.token {
		t.Errorf("the admin token changed across the upgrade")
	}
	toSchema := schemaVersion(t, p)
	if toSchema <= fromSchema {
		t.Fatalf("schema %d after the upgrade from %d", toSchema, fromSchema)
	}
	applied := migrationsApplied(t, p)
	p.must(t, "restart", "controld")
	p.waitHealthy(t, "controld")
	if again := migrationsApplied(t, p); again != applied {
		t.Errorf("migrations ran again on restart:\n%s\nthen\n%s", applied, again)
	}
	expectFiles(t, c, comics, want)
	waitGroups(t, c, groups, inGroups)
	waitCovers(t, c, want)
	// The old release's cover URL still serves (this release signs new ones).
	getCover(t, c, cover)
	fetchCover(t, c, comics)

	lap("upgrade checked")
	backup := backupWhileWriting(t, p, c, filepath.Join(tmp, "backup"))
	lap("backup taken")
	defer lap("backup restored and checked")
	restoreIntoFreshVolume(t, backup, p.env["BINDERY_IMAGE"], env, want)
}

// release runs the release whose compose file is file, built as the image
// PROJECT:tag stamped with version tag, with `up -d --build` on the
// project's volume, and waits for controld's health.
func (p *composeProject) release(t *testing.T, lap func(string), file, tag string) {
	t.Helper()
	p.file = file
	p.env["BINDERY_IMAGE"] = p.name + ":" + tag
	p.env["BINDERY_VERSION"] = tag
	p.upBuild(t)
	lap(tag + " release built and started")
	p.waitHealthy(t, "controld")
	lap(tag + " release healthy")
}

// schemaVersion is the highest migration applied to the state volume's
// database, read with the image's own sqlite3.
func schemaVersion(t *testing.T, p *composeProject) int {
	t.Helper()
	out := sqlite(t, p, "SELECT max(version_id) FROM goose_db_version")
	v, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("schema version %q: %v", out, err)
	}
	return v
}

// migrationsApplied lists the goose rows: a migration that ran twice shows
// twice.
func migrationsApplied(t *testing.T, p *composeProject) string {
	t.Helper()
	return sqlite(t, p, "SELECT version_id, count(*) FROM goose_db_version WHERE is_applied GROUP BY version_id ORDER BY version_id")
}

func sqlite(t *testing.T, p *composeProject, query string) string {
	t.Helper()
	out, code := p.exec(t, "controld", `sqlite3 -readonly /state/bindery.db "`+query+`"`)
	if code != 0 {
		t.Fatalf("sqlite3 %q: exit %d: %s", query, code, out)
	}
	return strings.TrimSpace(out)
}

var integrityOK = regexp.MustCompile(`(?m)^ok$`)

// restoreScript is the restore step of docs/OPERATIONS.md §5, run in a
// one-off container of the service: all three database files go, so no
// stale -wal meets the restored file.
const restoreScript = `rm -f /state/bindery.db /state/bindery.db-wal /state/bindery.db-shm && ` +
	`cp /backup/bindery-backup.db /state/bindery.db && chmod 0640 /state/bindery.db`

// backupWhileWriting scans the bulk library so that workerd writes cover
// rows, and meanwhile takes the backup exactly as docs/OPERATIONS.md §5
// says (`exec controld sqlite3 … .backup`, then `docker cp`). It returns
// the backup's path on the host, already checked with PRAGMA
// integrity_check.
func backupWhileWriting(t *testing.T, p *composeProject, c apiClient, dir string) string {
	t.Helper()
	bulk := createLibrary(t, c, "bulk")
	if code := c.do(t, "POST", "/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, bulk), nil); code != 201 && code != 202 {
		t.Fatalf("request scan: %d", code)
	}
	var m struct{ Pending, Ready int }
	c.do(t, "GET", "/thumbnails/metrics", "", &m)
	readyBefore := m.Ready
	waitFor(t, "workerd rendering the bulk library's covers", 2*time.Minute, func() bool {
		c.do(t, "GET", "/thumbnails/metrics", "", &m)
		return m.Ready > readyBefore && m.Pending > 0
	})
	p.must(t, "exec", "-T", "controld", "sqlite3", "/state/bindery.db", ".timeout 10000", ".backup /state/bindery-backup.db")
	c.do(t, "GET", "/thumbnails/metrics", "", &m)
	if m.Pending == 0 {
		t.Errorf("the covers were all rendered by the time the backup ended: it did not run beside workerd's writes")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bindery-backup.db")
	if out, err := exec.Command("docker", "cp", p.container(t, "controld")+":/state/bindery-backup.db", path).CombinedOutput(); err != nil {
		t.Fatalf("docker cp: %v\n%s", err, out)
	}
	out, err := exec.Command("sqlite3", path, "PRAGMA integrity_check").CombinedOutput()
	if err != nil || !integrityOK.Match(out) {
		t.Fatalf("backup integrity_check: %v: %s", err, out)
	}
	return path
}

// restoreIntoFreshVolume restores the backup into a new project's empty
// state volume as docs/OPERATIONS.md §5 says (copied in by a one-off
// container of the service, so it belongs to the service user), starts it
// and checks the restored index.
func restoreIntoFreshVolume(t *testing.T, backup, image string, env map[string]string, want int) {
	t.Helper()
	port := strings.Split(freeAddr(t), ":")[1]
	r := newNamedCompose(t, "-restored", deployPath(t, "docker-compose.yml"), env)
	r.env["BINDERY_HTTP_PORT"] = port
	r.env["BINDERY_IMAGE"] = image
	r.must(t, "run", "--rm", "--no-deps", "-v", filepath.Dir(backup)+":/backup:ro", "controld",
		"sh", "-c", restoreScript)
	r.must(t, "up", "-d")
	r.waitHealthy(t, "controld")
	if out := sqlite(t, r, "PRAGMA integrity_check"); !integrityOK.MatchString(out) {
		t.Errorf("restored database: integrity_check %s", out)
	}
	c := apiClient{base: "http://127.0.0.1:" + port, token: r.token(t)}
	var libs struct {
		Items []struct {
			ID   int64
			Name string
		}
	}
	c.mustDoJSON(t, "GET", "/libraries", "", 200, &libs)
	if len(libs.Items) != 2 {
		t.Fatalf("restored libraries: %+v", libs.Items)
	}
	expectFiles(t, c, libs.Items[0].ID, want)
	// The work in flight when the backup was taken (the bulk scan, its
	// covers) resumes once the backup's leases are recovered.
	var m struct{ Pending, Running int }
	waitFor(t, "the restored backup's pending covers", 3*time.Minute, func() bool {
		c.do(t, "GET", "/thumbnails/metrics", "", &m)
		return m.Pending == 0 && m.Running == 0
	})
}
