package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// zombieState is what the SIGSTOP episode recorded, checked at the end.
type zombieState struct {
	id        string
	rows      []checks.RowKey
	resumedAt string // protocol time of the SIGCONT
	notOwner  int    // owner-path writes as the zombie refused with ErrNotOwner
	tried     int
	logLost   int // "lease lost" lines the zombie logged after SIGCONT
	alive     bool
}

// zombie freezes a worker that holds a lease (SIGSTOP), waits until every
// row it held was recovered by someone else, proves that the owner-path
// writes of the zombie's id are refused (ErrNotOwner) on those rows, then
// lets it run again (SIGCONT): its heartbeats and finishes must now find
// the rows no longer theirs and write nothing. It returns false when no
// worker held a lease at this moment (the caller tries again later).
func (h *harness) zombie(ctx context.Context) (bool, error) {
	for _, slot := range h.holders(ctx, 3*time.Second) {
		w := h.c.worker(slot)
		if err := w.signal(syscall.SIGSTOP); err != nil {
			return false, err
		}
		if err := w.waitStopped(2 * time.Second); err != nil {
			_ = w.signal(syscall.SIGCONT)
			return false, err
		}
		held, err := h.held(w.name) // what it holds now that it cannot change
		if err != nil || len(held) == 0 {
			_ = w.signal(syscall.SIGCONT)
			continue
		}
		// A process frozen inside a write transaction keeps SQLite's write
		// lock, so nobody could recover its rows until it runs again: that
		// is SQLite's nature, not a lease bug. Thaw it and try later.
		if !h.writeLockFree() {
			_ = w.signal(syscall.SIGCONT)
			h.logf("SIGSTOP %s landed inside a write transaction; thawed, retrying later", w.name)
			return false, nil
		}
		z := &zombieState{id: w.name, rows: held}
		h.logf("SIGSTOP %s holding %d rows %v", w.name, len(held), held)
		if err := h.waitRecovered(ctx, z); err != nil {
			_ = w.signal(syscall.SIGCONT)
			return false, err
		}
		if err := h.ownerWrites(ctx, z); err != nil {
			_ = w.signal(syscall.SIGCONT)
			return false, err
		}
		logBefore := len(w.logText())
		z.resumedAt = protocol.FormatTime(time.Now())
		if err := w.signal(syscall.SIGCONT); err != nil {
			return false, err
		}
		time.Sleep(2 * h.cfg.Lease)
		z.alive = w.alive()
		z.logLost = strings.Count(w.logText()[logBefore:], "lease lost")
		h.logf("SIGCONT %s after its rows were recovered: alive=%v, %d lease-lost lines", w.name, z.alive, z.logLost)
		h.zombieState = z
		h.r.ZombieRows = len(held)
		return true, nil
	}
	return false, nil
}

// holders waits up to d for a worker slot that holds a lease and returns
// the slots holding one then (none when d passed). Jobs are short (a hash
// job of the smoke library takes tens of milliseconds), so a single look
// would mostly find the workers idle between claims.
func (h *harness) holders(ctx context.Context, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		var out []string
		for _, slot := range []string{"a", "b"}[h.rng.IntN(2):] {
			if held, _ := h.held(h.c.worker(slot).name); len(held) > 0 {
				out = append(out, slot)
			}
		}
		if len(out) > 0 {
			return out
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// writeLockFree reports whether a writer can start a write within two
// seconds (an empty UPDATE in a transaction, rolled back). On SQLite a
// process frozen inside a write transaction holds the one write lock; on
// PostgreSQL only its rows' locks, until the server ends the idle
// transaction.
func (h *harness) writeLockFree() bool {
	db, err := store.OpenRaw(h.c.db)
	if err != nil {
		return false
	}
	done := make(chan error, 1)
	go func() {
		defer db.Close()
		tx, err := db.Begin()
		if err == nil {
			_, err = tx.Exec(`UPDATE jobs SET retry_after = retry_after WHERE 1 = 0`)
			_ = tx.Rollback()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(2 * time.Second):
		return false
	}
}

// waitRecovered waits until none of the zombie's rows is running under its
// id any more: the other worker's claim (or controld's sweep) took them
// back once the lease expired.
func (h *harness) waitRecovered(ctx context.Context, z *zombieState) error {
	deadline := time.Now().Add(4*h.cfg.Lease + time.Minute)
	for {
		held, err := h.held(z.id)
		if err == nil && len(held) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rows of stopped worker %s not recovered within %v: %v", z.id, 4*h.cfg.Lease+time.Minute, held)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ownerWrites tries the zombie's heartbeat and finish on each recovered row
// through the store, exactly as its engine would after waking up.
func (h *harness) ownerWrites(ctx context.Context, z *zombieState) error {
	st, err := store.Open(ctx, store.Config{Path: cmp.Or(h.c.workerURL, h.c.db), Role: store.RoleWorker})
	if err != nil {
		return err
	}
	defer st.Close()
	ls := leases.New(st)
	try := func(err error) {
		z.tried++
		if errors.Is(err, store.ErrNotOwner) {
			z.notOwner++
		}
	}
	// The row's epoch now is the newest a zombie could hold: an end refused
	// under it is refused under the zombie's own.
	newest := func(t model.LeaseTable, id int64) (model.Fence, error) {
		epoch, err := storetest.QueryInt(ctx, st, `SELECT lease_epoch FROM `+string(t)+` WHERE id = ?`, id)
		return model.Fence{Table: t, ID: id, WorkerID: z.id, Epoch: epoch}, err
	}
	tables := map[string]model.LeaseTable{"jobs": model.LeaseJobs, "thumbnails": model.LeaseThumbnails,
		"cleanup": model.LeaseCleanup, "wal": model.LeaseWAL}
	for _, k := range z.rows {
		f, err := newest(tables[k.Table], k.ID)
		if err != nil {
			return err
		}
		switch k.Table {
		case "jobs":
			_, err := ls.HeartbeatJob(ctx, f, h.cfg.Lease, leases.JobProgress{})
			try(err)
			try(ls.FinishJob(ctx, f, leases.JobOutcome{Status: protocol.JobCompleted}))
		case "thumbnails":
			try(ls.HeartbeatLease(ctx, f, h.cfg.Lease))
			try(ls.FinishThumbnail(ctx, f, leases.ThumbnailDone{Width: 1, Height: 1, BytesSize: 1}))
		case "cleanup":
			try(ls.HeartbeatLease(ctx, f, h.cfg.Lease))
			try(ls.FinishCleanup(ctx, f, 0, 0))
		case "wal":
			try(ls.HeartbeatLease(ctx, f, h.cfg.Lease))
			try(ls.SucceedCheckpoint(ctx, f, leases.CheckpointFigures{}))
		}
	}
	return nil
}

// zombieCheck: every owner-path write as the zombie was refused, and no
// row the zombie held ended under its id unless it claimed the row again
// after it woke up (a claim sets started_at).
func (h *harness) zombieCheck(ctx context.Context) checks.Check {
	c := checks.Check{Name: "zombie worker wrote nothing after its lease was recovered"}
	z := h.zombieState
	if z == nil {
		c.Detail = "no zombie episode ran"
		return c
	}
	tables := map[string]string{"jobs": "jobs", "thumbnails": "thumbnails", "cleanup": "thumbnail_cleanup_jobs", "wal": "wal_maintenance_jobs"}
	var bad []string
	reclaimed := 0
	for _, k := range z.rows {
		var status, owner, started string
		startedCol := "coalesce(CAST(started_at AS TEXT),'')"
		if k.Table == "cleanup" {
			startedCol = "''" // thumbnail_cleanup_jobs has no started_at
		}
		// The table and column come from the fixed values above.
		err := h.ro.QueryRowContext(ctx, `SELECT status, coalesce(worker_id,''), `+startedCol+` FROM `+tables[k.Table]+
			` WHERE id = ?`, k.ID).Scan(&status, &owner, &started)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%v: %v", k, err))
			continue
		}
		if owner != z.id {
			continue
		}
		if k.Table == "cleanup" || started > z.resumedAt {
			reclaimed++ // cleanup rows have no claim time to compare
			continue
		}
		bad = append(bad, fmt.Sprintf("%s %d ended %s under %s, claimed at %s before the SIGCONT at %s", k.Table, k.ID, status, owner, started, z.resumedAt))
	}
	c.OK = len(bad) == 0 && z.notOwner == z.tried && z.tried > 0 && z.alive
	c.Detail = fmt.Sprintf("%s held %d rows; %d/%d owner writes as it refused with ErrNotOwner; alive after SIGCONT: %v; %d lease-lost log lines; %d rows legitimately re-claimed later",
		z.id, len(z.rows), z.notOwner, z.tried, z.alive, z.logLost, reclaimed)
	if len(bad) > 0 {
		c.Detail += ": " + strings.Join(bad, "; ")
	}
	return c
}
