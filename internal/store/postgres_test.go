package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

func onlyPostgres(t *testing.T) {
	t.Helper()
	if !storetest.Postgres() {
		t.Skip("PostgreSQL only: run with " + storetest.EngineVar + "=postgres")
	}
}

// TestDatabaseClock: on PostgreSQL the store's clock is the server's, so a
// host whose own clock is off cannot write leases in its own time.
func TestDatabaseClock(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	path := storetest.MustMigrate(t)
	s := storetest.MustOpen(t, path, store.RoleControl, nil)
	var server time.Time
	if err := s.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if d := s.Now().Sub(server); d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Fatalf("store clock %v, server %v: %v apart", s.Now(), server, d)
	}
	id, err := s.InsertID(ctx, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', ?, ?) RETURNING id`, s.Now(), s.Now())
	if err != nil {
		t.Fatal(err)
	}
	w := storetest.MustOpen(t, path, store.RoleWorker, nil)
	j, err := w.ClaimJob(ctx, "w1", time.Minute)
	if err != nil || j == nil || j.ID != id {
		t.Fatalf("claim = %+v, %v", j, err)
	}
	var lease time.Duration
	if err := s.QueryRow(ctx, `SELECT (extract(epoch FROM lease_expires_at - clock_timestamp()) * 1000)::bigint FROM jobs WHERE id = ?`, id).Scan(&lease); err != nil {
		t.Fatal(err)
	}
	if lease *= time.Millisecond; lease < 59*time.Second || lease > time.Minute {
		t.Fatalf("lease ends %v after the server's now, want just under a minute", lease)
	}
}

// TestWorkerRoleRefused: workerd given a role that owns the schema (and so
// bypasses the grants) is refused at open, not trusted.
func TestWorkerRoleRefused(t *testing.T) {
	onlyPostgres(t)
	path := storetest.MustMigrate(t)
	_, err := store.Open(context.Background(), store.Config{Path: path, Role: store.RoleWorker})
	if !errors.Is(err, store.ErrWorkerRole) {
		t.Fatalf("open as worker with the owner's role: %v", err)
	}
}
