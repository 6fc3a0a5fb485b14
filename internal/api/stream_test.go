package api_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestEventStream: rows written by "workerd" (another connection, the
// worker role) reach an SSE client as job, thumbnail and scan_error events.
func TestEventStream(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.broker.Run(ctx) }()
	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	lib := e.library("a")
	f := e.file(lib, "a.cbz")

	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	recordStatus("GET", "/api/v1/events", res.StatusCode)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %v", res.StatusCode, res.Header)
	}
	for e.broker.Subscribers() == 0 {
		<-e.broker.Polled()
	}
	<-e.broker.Polled()

	sc := bufio.NewScanner(res.Body)
	deadline := time.AfterFunc(10*time.Second, cancel)
	defer deadline.Stop()
	// waitFor reads the stream until a line holds every string. Polling
	// coalesces changes made between two polls, so each step waits for its
	// event before the next change.
	waitFor := func(parts ...string) {
		t.Helper()
		for sc.Scan() {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(sc.Text(), p)
			}
			if ok {
				return
			}
		}
		t.Fatalf("stream ended before %v", parts)
	}

	e.expect(e.call("POST", "/api/v1/jobs", `{"kind":"scan","library_id":1}`), 201, "")
	waitFor(`"id":1`, `"status":"pending"`)
	now := e.now()
	if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE jobs SET status = 'running', worker_id = 'w', lease_expires_at = '2999-01-01 00:00:00.000',
		processed_items = 5, progress = 0.5, started_at = ?, updated_at = ? WHERE id = 1`, now, now); err != nil {
		t.Fatal(err)
	}
	waitFor(`"status":"running"`, `"progress":0.5`, `"processed_items":5`)
	if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO scan_sessions (job_id, library_id, started_at) VALUES (1, ?, ?)`, lib, now); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO scan_errors (session_id, relative_path, error_code, message, created_at)
		VALUES (1, 'bad.cbz', 'archive_corrupt', 'zip: not a valid zip file', ?)`, now); err != nil {
		t.Fatal(err)
	}
	waitFor(`"relative_path":"bad.cbz"`, `"error_code":"archive_corrupt"`)
	e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, created_at, updated_at)
		VALUES (?, ?, 'library:1', 'ready', 'covers/001/1.webp', ?, ?)`, f, lib, now, now)
	waitFor(`"file_id":1`, `"status":"ready"`)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("broker: %v", err)
	}
}
