package scheduler

import (
	"fmt"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// TestFollowUpOutOfOrderCommit: a finished job that becomes visible after
// a job with a higher id was followed up is still followed up. On
// PostgreSQL ids are taken at INSERT: two transactions, the first (lower
// id) commits after the second and after a follow-up pass. On SQLite,
// where writers take turns, the lower id is inserted later by hand.
func TestFollowUpOutOfOrderCommit(t *testing.T) {
	t.Parallel()
	e := setup(t, 2)
	s := New(e.control, fastConfig(nil))
	raw, err := store.OpenRaw(e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	now := protocol.FormatTime(e.control.Now())
	const finished = `INSERT INTO jobs (%skind, status, library_id, priority, payload, created_at, updated_at, finished_at)
		VALUES (%s'scan', 'completed', ?, 'normal', '{}', ?, ?, ?) RETURNING id`
	pass := func(want int64) {
		t.Helper()
		n, err := s.followUpJobs(e.ctx)
		if err != nil || n != want {
			t.Fatalf("follow-up pass: %d jobs, %v; want %d", n, err, want)
		}
	}
	var first int64
	var commitFirst func()
	if storetest.Postgres() {
		tx, err := raw.BeginTx(e.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := tx.QueryRowContext(e.ctx, fmt.Sprintf(finished, "", ""), e.libs[0], now, now, now).Scan(&first); err != nil {
			t.Fatal(err)
		}
		commitFirst = func() {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		first = 5
		commitFirst = func() {
			if _, err := raw.ExecContext(e.ctx, fmt.Sprintf(finished, "id, ", "5, "), e.libs[0], now, now, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	var second int64
	cols, vals := "", "" // PostgreSQL: the next id, above first's
	if !storetest.Postgres() {
		cols, vals = "id, ", "10, "
	}
	if err := raw.QueryRowContext(e.ctx, fmt.Sprintf(finished, cols, vals), e.libs[1], now, now, now).Scan(&second); err != nil {
		t.Fatal(err)
	}
	pass(1)
	commitFirst()
	pass(1)
	for _, id := range []int64{first, second} {
		if n, _ := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM job_followups WHERE job_id = ?`, id); n != 1 {
			t.Fatalf("job %d: %d follow-up rows", id, n)
		}
	}
	pass(0)
}
