package scan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// recoverOnProgress is a Reporter that, on its first report (made after a
// batch committed, outside any transaction), takes the scan's lease away
// as a stalled heartbeat and controld's sweep would, then records what the
// database holds.
type recoverOnProgress struct {
	e     *env
	jobID int64
	at    string // the dump when the lease was lost
	done  bool
}

func (r *recoverOnProgress) Progress(processed, total int64) {
	if r.done {
		return
	}
	r.done = true
	if _, err := storetest.Exec(context.Background(), r.e.control, `UPDATE jobs SET lease_expires_at = '2000-01-01 00:00:00.000'
		WHERE id = ?`, r.jobID); err != nil {
		r.e.t.Error(err)
	}
	if c, err := leases.New(r.e.control).RecoverStale(context.Background()); err != nil || c.Jobs != 1 {
		r.e.t.Errorf("recover: %+v %v", c, err)
	}
	r.at = r.e.fullDump()
}

// fullDump is dump with the sessions and their errors.
func (e *env) fullDump() string {
	return e.dump() + strings.Join(e.rows(`SELECT id, status, COALESCE(error_code, ''), files_seen, added FROM scan_sessions ORDER BY id`), "\n") +
		"\n" + e.one(`SELECT count(*) FROM scan_errors`)
}

// TestLostLeaseScanWritesNothingMore: a scan whose lease is recovered after
// its first batch goes on walking, but none of its writes lands (DESIGN
// invariant 10): it stops with the lost lease, and its session is the one
// recovery closed.
func TestLostLeaseScanWritesNothingMore(t *testing.T) {
	t.Parallel()
	e := setup(t) // batches of 7
	for i := range 20 {
		e.file(fmt.Sprintf("S%d/issue %02d.cbz", i%3, i), cbz(t, "", pages(i%4+1)...), t0)
	}
	job := e.job("{}")
	rep := &recoverOnProgress{e: e, jobID: job.ID}
	_, err := e.exec.Execute(context.Background(), job, rep)
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("scan returned %v, want the lost lease", err)
	}
	if !rep.done {
		t.Fatal("the scan never reported progress")
	}
	if got := e.fullDump(); got != rep.at {
		t.Fatalf("written after the lease was lost:\n%s\nwas\n%s", got, rep.at)
	}
	if got := e.one(`SELECT count(*) FROM library_files`); got != "7" {
		t.Fatalf("%s files, want the first batch's 7", got)
	}
	if got := e.one(`SELECT status || '|' || error_message FROM scan_sessions`); got != "failed|"+leases.RecoveredScanMessage {
		t.Fatalf("session %s", got)
	}
}
