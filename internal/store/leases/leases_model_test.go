package leases_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// modelRow is what the model believes about one lease row.
type modelRow struct {
	table  string // "jobs" or "thumbnails"
	kind   string // jobs only
	status string
	owner  string
	lease  time.Time
	cancel bool
	// recovered counts a thumbnail's stale-lease recoveries; the
	// MaxRecoveries-th fails it (render_crashed).
	recovered int
	// epoch is the row's lease_epoch, raised by every claim: the
	// token its owner finishes under.
	epoch int64
}

// leaseModel drives random interleavings of claim, heartbeat, finish,
// expiry, recovery, cancel and requeue by 2–4 workers against one real
// SQLite file and checks every outcome against a model of protocol §4.
type leaseModel struct {
	ctx     context.Context
	clock   *storetest.Clock
	control *store.Store
	ctl     *leases.Leases // control's
	workers []*leases.Leases
	names   []string
	raw     *sql.DB
	rows    map[int64]*modelRow // key: id for jobs, -id for thumbnails
}

func (m *leaseModel) now() time.Time { return m.clock.Now().Truncate(time.Millisecond) }

func (m *leaseModel) activeScanHash() int {
	n := 0
	for _, r := range m.rows {
		if r.table == "jobs" && (r.status == "pending" || r.status == "running") {
			n++
		}
	}
	return n
}

// recoverModel applies the stale-lease rule to one table of the model.
func (m *leaseModel) recoverModel(table string) int64 {
	var n int64
	for _, r := range m.rows {
		if r.table == table && r.status == "running" && !r.lease.After(m.now()) {
			n++
			r.owner = ""
			r.status = map[string]string{"jobs": "retryable", "thumbnails": "pending"}[table]
			if table == "thumbnails" {
				if r.recovered++; r.recovered >= leases.MaxRecoveries {
					r.status = "failed"
				}
			}
		}
	}
	return n
}

func (m *leaseModel) ids(rt *rapid.T, table string) int64 {
	var keys []int64
	for k, r := range m.rows {
		if r.table == table {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		rt.Skip("no rows")
	}
	return rapid.SampledFrom(sortInts(keys)).Draw(rt, "row")
}

func sortInts(s []int64) []int64 {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func (m *leaseModel) worker(rt *rapid.T) (int, *leases.Leases) {
	i := rapid.IntRange(0, len(m.workers)-1).Draw(rt, "worker")
	return i, m.workers[i]
}

func (m *leaseModel) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"insertJob": func(rt *rapid.T) {
			kind := rapid.SampledFrom([]string{"scan", "hash"}).Draw(rt, "kind")
			ts := protocol.FormatTime(m.now())
			id, err := storetest.InsertID(m.ctx, m.control, `INSERT INTO jobs (kind, created_at, updated_at) VALUES (?, ?, ?) RETURNING id`, kind, ts, ts)
			if m.activeScanHash() > 0 {
				if !store.IsUnique(err) {
					rt.Fatalf("second active scan/hash: err = %v", err)
				}
				return
			}
			if err != nil {
				rt.Fatal(err)
			}
			m.rows[id] = &modelRow{table: "jobs", kind: kind, status: "pending"}
		},
		"insertThumbnail": func(rt *rapid.T) {
			ts := protocol.FormatTime(m.now())
			id, err := storetest.InsertID(m.ctx, m.control, `INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
				VALUES ((SELECT coalesce(max(id), 0) + 1 FROM thumbnails), 1, 'g', 'x', ?, ?) RETURNING id`, ts, ts)
			if err != nil {
				rt.Fatal(err)
			}
			m.rows[-id] = &modelRow{table: "thumbnails", status: "pending"}
		},
		"claimJob": func(rt *rapid.T) {
			i, w := m.worker(rt)
			j, err := w.ClaimJob(m.ctx, m.names[i], lease)
			if err != nil {
				rt.Fatal(err)
			}
			m.recoverModel("jobs")
			var want int64
			for id, r := range m.rows {
				if r.table == "jobs" && r.status == "pending" {
					want = id // at most one: the single-active index
				}
			}
			if j == nil || want == 0 {
				if j != nil || want != 0 {
					rt.Fatalf("claimJob got %v, want %d", j, want)
				}
				return
			}
			if j.ID != want || j.CancelRequested != m.rows[want].cancel {
				rt.Fatalf("claimJob got %d (cancel %v), want %d", j.ID, j.CancelRequested, want)
			}
			r := m.rows[want]
			r.status, r.owner, r.lease = "running", m.names[i], m.now().Add(lease)
			if r.epoch++; j.LeaseEpoch != r.epoch {
				rt.Fatalf("claimJob epoch %d, want %d", j.LeaseEpoch, r.epoch)
			}
		},
		"claimThumbnail": func(rt *rapid.T) {
			i, w := m.worker(rt)
			th, err := w.ClaimThumbnail(m.ctx, m.names[i], lease)
			if err != nil {
				rt.Fatal(err)
			}
			m.recoverModel("thumbnails")
			// Fresh rows oldest first; a suspect only into a worker with
			// nothing running; nothing beside a running suspect.
			var fresh, suspect int64
			var mine, mineSuspect bool
			for k, r := range m.rows {
				switch {
				case r.table != "thumbnails":
				case r.status == "running" && r.owner == m.names[i]:
					mine, mineSuspect = true, mineSuspect || r.recovered > 0
				case r.status != "pending":
				case r.recovered == 0 && (fresh == 0 || -k < fresh):
					fresh = -k
				case r.recovered > 0 && (suspect == 0 || -k < suspect):
					suspect = -k
				}
			}
			want := fresh
			if want == 0 && !mine {
				want = suspect
			}
			if mineSuspect {
				want = 0
			}
			got := int64(0)
			if th != nil {
				got = th.ID
			}
			if got != want {
				rt.Fatalf("claimThumbnail got %d, want %d", got, want)
			}
			if th != nil {
				r := m.rows[-want]
				r.status, r.owner, r.lease = "running", m.names[i], m.now().Add(lease)
				if r.epoch++; th.LeaseEpoch != r.epoch {
					rt.Fatalf("claimThumbnail epoch %d, want %d", th.LeaseEpoch, r.epoch)
				}
			}
		},
		"heartbeat": func(rt *rapid.T) {
			key := m.ids(rt, rapid.SampledFrom([]string{"jobs", "thumbnails"}).Draw(rt, "table"))
			i, w := m.worker(rt)
			r := m.rows[key]
			var err error
			var cancel bool
			if r.table == "jobs" {
				var sig leases.JobSignals
				sig, err = w.HeartbeatJob(m.ctx, model.Fence{Table: model.LeaseJobs, ID: key, WorkerID: m.names[i], Epoch: r.epoch}, lease, leases.JobProgress{Processed: 1, Total: 2})
				cancel = sig.CancelRequested
			} else {
				err = w.HeartbeatLease(m.ctx, thumbFence(-key, m.names[i], r.epoch), lease)
			}
			// An expired lease is stale: only recovery may touch the row.
			live := *r
			if !r.lease.After(m.now()) {
				live.owner = ""
			}
			m.expectOwned(rt, &live, i, err)
			if err == nil {
				r.lease = m.now().Add(lease)
				if cancel != r.cancel {
					rt.Fatalf("heartbeat cancel = %v, want %v", cancel, r.cancel)
				}
			}
		},
		"finish": func(rt *rapid.T) {
			key := m.ids(rt, rapid.SampledFrom([]string{"jobs", "thumbnails"}).Draw(rt, "table"))
			i, w := m.worker(rt)
			r := m.rows[key]
			ok := rapid.Bool().Draw(rt, "success")
			var err error
			var final string
			switch {
			case r.table == "jobs":
				final = rapid.SampledFrom([]string{"completed", "failed", "cancelled"}).Draw(rt, "status")
				f := model.Fence{Table: model.LeaseJobs, ID: key, WorkerID: m.names[i], Epoch: r.epoch}
				err = w.FinishJob(m.ctx, f, leases.JobOutcome{Status: protocol.JobStatus(final)})
			case ok:
				final, err = "ready", w.FinishThumbnail(m.ctx, thumbFence(-key, m.names[i], r.epoch), leases.ThumbnailDone{})
			default:
				final, err = "failed", w.FailThumbnail(m.ctx, thumbFence(-key, m.names[i], r.epoch), protocol.ErrDecodeError, "x")
			}
			// Every end is fenced: an expired lease is lost already.
			live := *r
			if !r.lease.After(m.now()) {
				live.owner = ""
			}
			m.expectOwned(rt, &live, i, err)
			if err == nil {
				r.status = final
			}
		},
		"release": func(rt *rapid.T) {
			i, w := m.worker(rt)
			c, err := w.ReleaseWorker(m.ctx, m.names[i])
			if err != nil {
				rt.Fatal(err)
			}
			var want leases.RecoverCounts
			for _, r := range m.rows {
				if r.status == "running" && r.owner == m.names[i] {
					r.owner = ""
					if r.table == "jobs" {
						r.status = "retryable"
						want.Jobs++
					} else {
						r.status = "pending"
						want.Thumbnails++
					}
				}
			}
			if c != want {
				rt.Fatalf("release = %+v, want %+v", c, want)
			}
		},
		"advanceClock": func(rt *rapid.T) {
			m.clock.Advance(time.Duration(rapid.IntRange(0, 45).Draw(rt, "seconds")) * time.Second)
		},
		"recover": func(rt *rapid.T) {
			c, err := m.ctl.RecoverStale(m.ctx)
			if err != nil {
				rt.Fatal(err)
			}
			want := leases.RecoverCounts{Jobs: m.recoverModel("jobs"), Thumbnails: m.recoverModel("thumbnails")}
			if c != want {
				rt.Fatalf("recover = %+v, want %+v", c, want)
			}
		},
		"requestCancel": func(rt *rapid.T) {
			key := m.ids(rt, "jobs")
			if _, err := storetest.Exec(m.ctx, m.control, `UPDATE jobs SET cancel_requested = 1 WHERE id = ?`, key); err != nil {
				rt.Fatal(err)
			}
			m.rows[key].cancel = true
		},
		"requeue": func(rt *rapid.T) {
			if _, _, err := m.ctl.RequeueRetryableJobs(m.ctx, 3); err != nil {
				rt.Fatal(err)
			}
			// Retry policy is controld's: only retryable rows may move, and
			// only to pending or a terminal state.
			for id, r := range m.rows {
				if r.table != "jobs" || r.status != "retryable" {
					continue
				}
				st := m.dbStatus(rt, "jobs", id)
				switch st {
				case "retryable", "pending", "failed", "cancelled":
					r.status = st
				default:
					rt.Fatalf("requeue moved job %d to %s", id, st)
				}
			}
		},
		"": func(rt *rapid.T) { m.check(rt) },
	}
}

// expectOwned checks that a lease-path write succeeded exactly when the
// model says worker i owns the running row.
func (m *leaseModel) expectOwned(rt *rapid.T, r *modelRow, i int, err error) {
	owned := r.status == "running" && r.owner == m.names[i]
	switch {
	case owned && err != nil:
		rt.Fatalf("owner's write refused: %v", err)
	case !owned && !errors.Is(err, store.ErrNotOwner):
		rt.Fatalf("non-owner's write: err = %v, want ErrNotOwner (row %+v, worker %s)", err, *r, m.names[i])
	}
}

func (m *leaseModel) dbStatus(rt *rapid.T, table string, id int64) string {
	var s string
	if err := m.raw.QueryRow(`SELECT status FROM `+table+` WHERE id = ?`, id).Scan(&s); err != nil {
		rt.Fatal(err)
	}
	return s
}

// check compares every row with the model and the global invariants.
func (m *leaseModel) check(rt *rapid.T) {
	var active int
	if err := m.raw.QueryRow(`SELECT count(*) FROM jobs WHERE status IN ('pending','running') AND kind IN ('scan','hash')`).Scan(&active); err != nil {
		rt.Fatal(err)
	}
	if active > 1 {
		rt.Fatalf("%d active scan/hash jobs", active)
	}
	for key, r := range m.rows {
		id := key
		if r.table == "thumbnails" {
			id = -key
		}
		var status string
		var owner, leaseAt sql.NullString
		err := m.raw.QueryRow(`SELECT status, worker_id, `+storetest.TimeText("lease_expires_at")+` FROM `+r.table+` WHERE id = ?`, id).Scan(&status, &owner, &leaseAt)
		if err != nil {
			rt.Fatal(err)
		}
		if status != r.status {
			rt.Fatalf("%s %d: status %s, model %s", r.table, id, status, r.status)
		}
		if status == "running" {
			if owner.String != r.owner || leaseAt.String != protocol.FormatTime(r.lease) {
				rt.Fatalf("%s %d: owner %s lease %s, model %s %s", r.table, id, owner.String, leaseAt.String, r.owner, protocol.FormatTime(r.lease))
			}
		} else if leaseAt.Valid {
			rt.Fatalf("%s %d: %s row keeps lease %s", r.table, id, status, leaseAt.String)
		}
	}
}

// drain lets one worker run everything to a terminal state, as a live
// workerd plus controld's timers would.
func (m *leaseModel) drain(t *rapid.T) {
	w, name := m.workers[0], m.names[0]
	for range 50 {
		m.clock.Advance(2 * time.Hour)
		if _, _, err := m.ctl.RequeueRetryableJobs(m.ctx, 1000); err != nil {
			t.Fatal(err)
		}
		for {
			j, err := w.ClaimJob(m.ctx, name, lease)
			if err != nil {
				t.Fatal(err)
			}
			th, err2 := w.ClaimThumbnail(m.ctx, name, lease)
			if err2 != nil {
				t.Fatal(err2)
			}
			if j == nil && th == nil {
				break
			}
			if j != nil {
				if err := w.FinishJob(m.ctx, j.Fence(), leases.JobOutcome{Status: protocol.JobCompleted}); err != nil {
					t.Fatal(err)
				}
			}
			if th != nil {
				if err := w.FinishThumbnail(m.ctx, th.Fence(), leases.ThumbnailDone{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var open int
		m.raw.QueryRow(`SELECT (SELECT count(*) FROM jobs WHERE status NOT IN ('completed','failed','cancelled'))
			+ (SELECT count(*) FROM thumbnails WHERE status NOT IN ('ready','failed'))`).Scan(&open)
		if open == 0 {
			return
		}
	}
	t.Fatal("rows never reached a terminal state")
}

func TestLeaseStateMachine(t *testing.T) {
	path := storetest.MustMigrate(t)
	clock := storetest.NewClock()
	control := storetest.MustOpen(t, path, store.RoleControl, clock.Now)
	var all []*leases.Leases
	for range 4 {
		all = append(all, leases.New(storetest.MustOpen(t, path, store.RoleWorker, clock.Now)))
	}
	raw := rawDB(t, path)
	rapid.Check(t, func(rt *rapid.T) {
		for _, q := range []string{`DELETE FROM jobs`, `UPDATE thumbnails SET status = 'failed'`, `DELETE FROM thumbnails`} {
			if _, err := storetest.Exec(context.Background(), control, q); err != nil {
				rt.Fatal(err)
			}
		}
		n := rapid.IntRange(2, 4).Draw(rt, "workers")
		m := &leaseModel{ctx: context.Background(), clock: clock, control: control, ctl: leases.New(control), workers: all[:n], raw: raw, rows: map[int64]*modelRow{}}
		for i := range n {
			m.names = append(m.names, fmt.Sprintf("w%d", i))
		}
		rt.Repeat(m.actions())
		m.drain(rt)
	})
}

// thumbFence is the token of a thumbnail claim by worker at epoch.
func thumbFence(id int64, worker string, epoch int64) model.Fence {
	return model.Fence{Table: model.LeaseThumbnails, ID: id, WorkerID: worker, Epoch: epoch}
}
