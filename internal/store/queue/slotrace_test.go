package queue_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// TestSlotTakenBeforeInsert: a third party (protocol §9.1) takes the
// single-active slot between a transaction's check that it is free and its
// INSERT. Every path that inserts a pending scan/hash job must then queue
// (or leave the queue as it is) instead of failing: on PostgreSQL a
// swallowed unique violation would abort the transaction (25P02). The
// third party writes inside the transaction (the row is visible to it: on
// SQLite the writer holds the lock, so that is the only way) and, on
// PostgreSQL, also from its own connection, committing meanwhile.
func TestSlotTakenBeforeInsert(t *testing.T) {
	ways := []string{"visible"}
	if storetest.Postgres() {
		ways = append(ways, "committed meanwhile")
	}
	for _, way := range ways {
		t.Run(way, func(t *testing.T) {
			t.Run("request", func(t *testing.T) {
				e := setupSlotRace(t, way)
				out := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh)
				if out.Queued == nil || out.Position != 1 || !out.Created {
					t.Fatalf("request while a third party took the slot: %+v", out)
				}
				e.onlyThirdPartyActive(t)
			})
			t.Run("promote", func(t *testing.T) {
				e := setupSlotRace(t, "")
				e.request(t, protocol.JobKindHash, e.libs[0], protocol.PriorityNormal)
				e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityNormal)
				e.finish(t, 1, protocol.JobCompleted)
				e.race(t, way)
				j, err := queue.New(e.st).PromoteQueueHead(e.ctx)
				if err != nil || j != nil {
					t.Fatalf("promote: %+v %v", j, err)
				}
				if q := queueTargets(t, e.st); len(q) != 1 {
					t.Fatalf("queue %v, want the scan still waiting", q)
				}
			})
			t.Run("follow-up", func(t *testing.T) {
				e := setupSlotRace(t, "")
				scan := e.request(t, protocol.JobKindScan, e.libs[0], protocol.PriorityHigh).Job
				e.finish(t, scan.ID, protocol.JobCompleted)
				e.race(t, way)
				done, hash, err := queue.New(e.st).FollowUpJob(e.ctx, scan.ID, true)
				if err != nil || !done || hash == nil || hash.Queued == nil {
					t.Fatalf("follow up: %v %+v %v", done, hash, err)
				}
				e.onlyThirdPartyActive(t)
			})
			t.Run("schedule", func(t *testing.T) {
				e := setupSlotRace(t, way)
				if _, err := storetest.Exec(e.ctx, e.st, `UPDATE libraries SET scan_interval_minutes = 5 WHERE id = ?`, e.libs[0]); err != nil {
					t.Fatal(err)
				}
				out, err := queue.New(e.st).RequestScheduledScans(e.ctx)
				if err != nil || len(out) != 1 || out[0].Queued == nil {
					t.Fatalf("scheduled scans: %+v %v", out, err)
				}
				e.onlyThirdPartyActive(t)
			})
		})
	}
}

// setupSlotRace is setupQueue with two libraries; unless way is "", the
// next pending-job INSERT meets a third party's scan of the second.
func setupSlotRace(t *testing.T, way string) *queueEnv {
	e := setupQueue(t, 2)
	if way != "" {
		e.race(t, way)
	}
	return e
}

// race makes the next pending-job INSERT, once, meet a pending scan of the
// second library that a third party inserted after the slot was checked.
func (e *queueEnv) race(t *testing.T, way string) {
	const take = `INSERT INTO jobs (kind, status, library_id, priority, payload, created_at, updated_at)
		VALUES ('scan', 'pending', ?, 'normal', '{}', ?, ?)`
	fired := false
	queue.SetSlotRaceHook(t, func(ctx context.Context, tx *sqlx.Tx) error {
		if fired {
			return nil
		}
		fired = true
		now := protocol.FormatTime(e.st.Now())
		if way == "visible" {
			_, err := tx.ExecContext(ctx, take, e.libs[1], now, now)
			return err
		}
		raw, err := store.OpenRaw(e.path)
		if err != nil {
			return err
		}
		defer raw.Close()
		_, err = raw.ExecContext(ctx, take, e.libs[1], now, now)
		return err
	})
}

// onlyThirdPartyActive checks that the one active scan/hash job is the
// third party's.
func (e *queueEnv) onlyThirdPartyActive(t *testing.T) {
	t.Helper()
	lib, err := storetest.QueryInt(e.ctx, e.st, `SELECT library_id FROM jobs WHERE status IN ('pending','running')`)
	if err != nil || lib != e.libs[1] {
		t.Fatalf("active job of library %d (%v), want the third party's of %d", lib, err, e.libs[1])
	}
}
