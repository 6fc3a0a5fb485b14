package deploy

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// Synology's defaults: the first user is 1026, the "users" group is 100.
const nasUID, nasGID = 1026, 100

// composeLibrary generates a library of cbz, cbr, cb7 and images with an
// extra copy of its first file under root/name and returns how many files a
// scan must index.
func composeLibrary(t *testing.T, root, name string, files int) int {
	t.Helper()
	dir := filepath.Join(root, name)
	m, err := fixtures.Library(dir, fixtures.LibrarySpec{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, filepath.FromSlash(m.Files[0].Path))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "copy of "+filepath.Base(src)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return len(m.Files) + 1
}

// duplicateGroups counts the groups of identical files in sums (path →
// digest), what the hash job must find.
func duplicateGroups(sums map[string]string) (groups, files int) {
	n := map[string]int{}
	for _, sum := range sums {
		n[sum]++
	}
	for _, c := range n {
		if c > 1 {
			groups++
			files += c
		}
	}
	return groups, files
}

// TestComposeEndToEnd runs deploy/docker-compose.yml as a NAS user would
// (`docker-compose up -d --build`, the Synology ids 1026:100, libraries only
// that user can read, mode 0750) and drives it through the published port:
// health, confinement, a 10,000-file scan with workerd restarted in the
// middle, the hash job's duplicate groups, every cover (videos' too, from
// the image's ffmpeg on its read-only root), a clean stop within
// the grace periods, and data that survives `down` and `up`. The library's
// bytes must be untouched.
func TestComposeEndToEnd(t *testing.T) {
	t.Parallel()
	needDocker(t, "debian", "golang")
	root := filepath.Join(t.TempDir(), "libraries")
	wantComics := composeLibrary(t, root, "comics", 120)
	wantComics += composeVideos(t, filepath.Join(root, "comics")) // the image's ffmpeg renders their covers
	wantBulk := composeLibrary(t, root, "bulk", 10000)
	chownTree(t, root, nasUID, nasGID)
	before := treeSums(t, root)
	port := strings.Split(freeAddr(t), ":")[1]
	p := newCompose(t, deployPath(t, "docker-compose.yml"), map[string]string{
		"BINDERY_LIBRARY_PATH": root,
		"BINDERY_UID":          strconv.Itoa(nasUID),
		"BINDERY_GID":          strconv.Itoa(nasGID),
		"BINDERY_VERSION":      "e2e",
		"BINDERY_HTTP_BIND":    "127.0.0.1",
		"BINDERY_HTTP_PORT":    port,
		// Short, so the restart below hands the running scan back instead
		// of letting it finish inside the grace.
		"BINDERY_SHUTDOWN_GRACE": "100ms",
	})
	p.upBuild(t)
	p.waitHealthy(t, "controld", "workerd")
	checkConfinement(t, p)

	c := apiClient{base: "http://127.0.0.1:" + port, token: p.token(t)}
	// The bulk library is there to make a scan last long enough to restart
	// workerd inside it; its 10,000 covers would only slow the test.
	c.mustDo(t, "PATCH", "/settings", `{"scan.cover.mode":"off"}`, 200)
	bulk := createLibrary(t, c, "bulk")
	scanWithRestart(t, p, c, bulk)
	c.mustDo(t, "PATCH", "/settings", `{"scan.cover.mode":"scan"}`, 200)
	comics := createLibrary(t, c, "comics")
	scan(t, c, comics)
	groups, inGroups := duplicateGroups(before)
	check := func() {
		t.Helper()
		expectFiles(t, c, bulk, wantBulk)
		expectFiles(t, c, comics, wantComics)
		waitGroups(t, c, groups, inGroups)
		waitCovers(t, c, wantComics)
	}
	check()
	cover := fetchCover(t, c, comics)

	stopWithinGrace(t, p)
	p.must(t, "down")
	p.must(t, "up", "-d")
	p.waitHealthy(t, "controld", "workerd")
	if c.token = p.token(t); c.token == "" {
		t.Fatal("no admin token after down/up")
	}
	check()
	if again := fetchCover(t, c, comics); again != cover {
		t.Errorf("cover URL changed across down/up: %s, then %s", cover, again)
	}
	stopWithinGrace(t, p)
	if after := treeSums(t, root); !maps.Equal(before, after) {
		t.Errorf("the library changed: %d files before, %d after", len(before), len(after))
	}
}

// checkConfinement looks inside both running containers: the daemon runs
// as the configured ids, the root filesystem is read-only, /libraries is
// mounted read-only and /state is writable.
func checkConfinement(t *testing.T, p *composeProject) {
	t.Helper()
	for _, svc := range []string{"controld", "workerd"} {
		out, _ := p.exec(t, svc, fmt.Sprintf(`for s in /proc/[0-9]*/status; do
			read -r comm < "${s%%status}comm" || continue
			[ "$comm" = %s ] && awk '/^Uid:|^Gid:/ {print $1, $2, $3}' "$s"
		done`, svc))
		if want := fmt.Sprintf("Uid: %d %d\nGid: %d %d\n", nasUID, nasUID, nasGID, nasGID); !strings.Contains(out, want) {
			t.Errorf("%s: process ids %q, want %q", svc, out, want)
		}
		if out, code := p.exec(t, svc, "touch /bindery-probe"); code == 0 || !strings.Contains(out, "Read-only file system") {
			t.Errorf("%s: the root filesystem is writable (exit %d: %s)", svc, code, out)
		}
		out, _ = p.exec(t, svc, `awk '$2 == "/libraries" || $2 == "/state" {print $2, $4}' /proc/mounts`)
		if !strings.Contains(out, "/libraries ro,") {
			t.Errorf("%s: /libraries is not mounted read-only: %q", svc, out)
		}
		if out, code := p.exec(t, svc, "touch /state/.probe && rm /state/.probe && touch /libraries/comics/x"); code == 0 ||
			!strings.Contains(out, "/libraries/comics/x") {
			t.Errorf("%s: /state writable and /libraries read-only expected: exit %d: %s", svc, code, out)
		}
	}
}

// jobView is the part of a job the tests follow.
type jobView struct {
	ID        int64
	Status    string
	Attempt   int64
	ErrorCode *string `json:"error_code"`
}

func (c apiClient) mustDo(t *testing.T, method, path, body string, want int) {
	t.Helper()
	c.mustDoJSON(t, method, path, body, want, nil)
}

func (c apiClient) mustDoJSON(t *testing.T, method, path, body string, want int, out any) {
	t.Helper()
	if code := c.do(t, method, path, body, out); code != want {
		t.Fatalf("%s %s: %d, want %d", method, path, code, want)
	}
}

func createLibrary(t *testing.T, c apiClient, name string) int64 {
	t.Helper()
	return createLibraryAt(t, c, name, "/libraries/"+name)
}

// scan requests a scan of the library and waits until it succeeded. The
// request may be queued (202) behind another library's active hash job.
func scan(t *testing.T, c apiClient, libraryID int64) {
	t.Helper()
	body := fmt.Sprintf(`{"kind":"scan","library_id":%d}`, libraryID)
	if code := c.do(t, "POST", "/jobs", body, nil); code != 201 && code != 202 {
		t.Fatalf("request scan: %d", code)
	}
	var lib struct {
		LastScan *struct{ Status string } `json:"last_scan"`
	}
	waitFor(t, fmt.Sprintf("library %d scanned", libraryID), 3*time.Minute, func() bool {
		c.do(t, "GET", fmt.Sprintf("/libraries/%d", libraryID), "", &lib)
		if lib.LastScan != nil && lib.LastScan.Status == "failed" {
			t.Fatalf("scan of library %d failed", libraryID)
		}
		return lib.LastScan != nil && lib.LastScan.Status == "succeeded"
	})
}

func waitJob(t *testing.T, c apiClient, id int64) {
	t.Helper()
	var job jobView
	waitFor(t, fmt.Sprintf("job %d completed", id), 3*time.Minute, func() bool {
		c.do(t, "GET", fmt.Sprintf("/jobs/%d", id), "", &job)
		if job.Status == "failed" || job.Status == "cancelled" {
			t.Fatalf("job %d ended %s (%v)", id, job.Status, deref(job.ErrorCode))
		}
		return job.Status == "completed"
	})
}

// scanWithRestart requests a scan and restarts workerd (`docker-compose
// restart workerd`) once the scan is running. The stopping worker must hand
// the scan back (retryable, worker_shutdown) and the restarted one finish it.
func scanWithRestart(t *testing.T, p *composeProject, c apiClient, libraryID int64) {
	t.Helper()
	var job jobView
	if code := c.do(t, "POST", "/jobs", fmt.Sprintf(`{"kind":"scan","library_id":%d}`, libraryID), &job); code != 201 {
		t.Fatalf("request scan: %d", code)
	}
	path := fmt.Sprintf("/jobs/%d", job.ID)
	deadline := time.Now().Add(3 * time.Minute)
	for job.Status == "pending" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		c.do(t, "GET", path, "", &job)
	}
	if job.Status != "running" {
		t.Fatalf("scan %s before workerd could be restarted mid-scan", job.Status)
	}
	// Watch the job while compose restarts the worker.
	handedBack := make(chan bool, 1)
	stop := make(chan struct{})
	go func() {
		seen := false
		for {
			select {
			case <-stop:
				handedBack <- seen
				return
			case <-time.After(20 * time.Millisecond):
			}
			var j jobView
			if _, err := c.try("GET", path, "", &j); err == nil {
				seen = seen || (j.Status == "retryable" && deref(j.ErrorCode) == "worker_shutdown")
			}
		}
	}()
	_, err := p.run("restart", "workerd")
	waitJob(t, c, job.ID)
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if !<-handedBack {
		t.Errorf("the scan was never handed back (retryable, worker_shutdown) by the stopping worker")
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func expectFiles(t *testing.T, c apiClient, libraryID int64, want int) {
	t.Helper()
	var lib struct {
		FileCount int `json:"file_count"`
	}
	c.do(t, "GET", fmt.Sprintf("/libraries/%d", libraryID), "", &lib)
	if lib.FileCount != want {
		t.Errorf("library %d holds %d files, want %d", libraryID, lib.FileCount, want)
	}
}

// waitGroups pages through every duplicate group until the hash jobs have
// found exactly the groups the library holds.
func waitGroups(t *testing.T, c apiClient, groups, files int) {
	t.Helper()
	var gotGroups, gotFiles int
	defer func() {
		if t.Failed() {
			t.Logf("duplicate groups: %d holding %d files, want %d holding %d", gotGroups, gotFiles, groups, files)
		}
	}()
	waitFor(t, "the duplicate groups", 3*time.Minute, func() bool {
		gotGroups, gotFiles = 0, 0
		cursor := ""
		for {
			var page struct {
				Items []struct {
					FileCount int `json:"file_count"`
				}
				NextCursor *string `json:"next_cursor"`
			}
			if code := c.do(t, "GET", "/duplicates/groups?limit=200"+cursor, "", &page); code != 200 {
				t.Fatalf("list duplicate groups: %d", code)
			}
			for _, g := range page.Items {
				gotGroups++
				gotFiles += g.FileCount
			}
			if page.NextCursor == nil {
				break
			}
			cursor = "&cursor=" + *page.NextCursor
		}
		return gotGroups == groups && gotFiles == files
	})
}

// waitCovers waits until no cover is pending and want are ready.
func waitCovers(t *testing.T, c apiClient, want int) {
	t.Helper()
	var m struct{ Ready, Pending, Running, Failed int }
	defer func() {
		if t.Failed() {
			t.Logf("covers: %+v, want %d ready", m, want)
		}
	}()
	waitFor(t, "every cover", 3*time.Minute, func() bool {
		c.do(t, "GET", "/thumbnails/metrics", "", &m)
		return m.Pending == 0 && m.Running == 0 && m.Ready+m.Failed >= want
	})
	if m.Ready != want {
		t.Errorf("covers: %+v, want %d ready", m, want)
	}
}

// fetchCover downloads the cover of the library's first file through the
// published port and returns its URL.
func fetchCover(t *testing.T, c apiClient, libraryID int64) string {
	t.Helper()
	var files struct {
		Items []struct {
			Cover struct{ URL string } `json:"cover"`
		}
	}
	if code := c.do(t, "GET", fmt.Sprintf("/files?library_id=%d&limit=1", libraryID), "", &files); code != 200 || len(files.Items) == 0 {
		t.Fatalf("list files: %d", code)
	}
	url := files.Items[0].Cover.URL
	getCover(t, c, url)
	return url
}

// getCover fetches a cover URL with the admin token; it must be an image.
func getCover(t *testing.T, c apiClient, url string) {
	t.Helper()
	req, _ := http.NewRequest("GET", c.base+url, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
		t.Fatalf("cover %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// stopWithinGrace stops the project as `docker-compose stop` does (SIGTERM,
// SIGKILL after stop_grace_period) and checks that both daemons exited 0 on
// their own, well inside the grace.
func stopWithinGrace(t *testing.T, p *composeProject) {
	t.Helper()
	ids := map[string]string{"controld": p.container(t, "controld"), "workerd": p.container(t, "workerd")}
	start := time.Now()
	p.must(t, "stop")
	const grace = 30 * time.Second // stop_grace_period in docker-compose.yml
	for svc, id := range ids {
		s := inspectState(t, id)
		took := s.FinishedAt.Sub(start)
		if s.Status != "exited" || s.ExitCode != 0 || took >= grace {
			t.Errorf("%s: %s with exit code %d after %v, want exit 0 within %v", svc, s.Status, s.ExitCode, took, grace)
		}
	}
}
