package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
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
	// The store's clock is the server's give or take half a round trip:
	// milliseconds, or a tenth of a second on a loaded machine, where a
	// host's own clock may be minutes off.
	const slack = 100 * time.Millisecond
	var server time.Time
	before := s.Now()
	if err := storetest.QueryRow(ctx, s, `SELECT clock_timestamp()`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	after := s.Now()
	if server.Before(before.Add(-slack)) || server.After(after.Add(slack)) {
		t.Fatalf("server clock %v, store clock %v to %v around that read", server, before, after)
	}
	id, err := storetest.InsertID(ctx, s, `INSERT INTO jobs (kind, created_at, updated_at) VALUES ('scan', ?, ?) RETURNING id`, s.Now(), s.Now())
	if err != nil {
		t.Fatal(err)
	}
	w := storetest.MustOpen(t, path, store.RoleWorker, nil)
	j, err := leases.New(w).ClaimJob(ctx, "w1", time.Minute)
	if err != nil || j == nil || j.ID != id {
		t.Fatalf("claim = %+v, %v", j, err)
	}
	var lease time.Duration
	if err := storetest.QueryRow(ctx, s, `SELECT (extract(epoch FROM lease_expires_at - clock_timestamp()) * 1000)::bigint FROM jobs WHERE id = ?`, id).Scan(&lease); err != nil {
		t.Fatal(err)
	}
	if lease *= time.Millisecond; lease < 59*time.Second || lease > time.Minute+slack {
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

// TestIsUnavailable: errors of a server that went away (shutdown, restart,
// refused or cut connections) are told from statements the server refused.
func TestIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true}, // terminating connection due to administrator command
		{&pgconn.PgError{Code: "57P03"}, true}, // the database system is starting up
		{&pgconn.PgError{Code: "08006"}, true}, // connection failure
		{fmt.Errorf("apply analysis: file 62: %w", &pgconn.PgError{Code: "57P01"}), true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{pgconn.ErrConnClosed, true},
		{&pgconn.PgError{Code: "23505"}, false}, // unique violation
		{&pgconn.PgError{Code: "40001"}, false}, // serialization failure: busy, not gone
		{store.ErrNotOwner, false},
		{errors.New("truncated zip"), false},
		{fmt.Errorf("io_error: write cover: %w", &fs.PathError{Op: "write", Path: "/state/covers/x.tmp", Err: syscall.ENOSPC}), false},
		{nil, false},
	} {
		if got := store.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("IsUnavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestIdleTransactionsEnd: on PostgreSQL every store connection asks the
// server to end a transaction left idle, so that a host cut off mid-write
// does not keep its row locks until TCP gives up.
func TestIdleTransactionsEnd(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("PostgreSQL only: an SQLite writer on this host cannot be cut off")
	}
	control, _, _ := storetest.MustOpenDB(t)
	var v string
	if err := storetest.QueryRow(context.Background(), control, `SHOW idle_in_transaction_session_timeout`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "10s" {
		t.Fatalf("idle_in_transaction_session_timeout = %q, want 10s", v)
	}
}

// TestConnectTimeout: a PostgreSQL URL without connect_timeout gets the
// store's own, so a server that accepts TCP but never answers (or a network
// that drops packets) fails an open within seconds; a URL's own value wins.
// No server is needed: the listener below answers nothing.
func TestConnectTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	base := "postgres://bindery@" + l.Addr().String() + "/bindery?application_name=t"
	for _, c := range []struct {
		name, url   string
		least, most time.Duration
	}{
		{"the URL's own", base + "&connect_timeout=1", 900 * time.Millisecond, 5 * time.Second},
		{"the store's default", base, 9 * time.Second, 20 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*c.most) // without a timeout, a hang
			defer cancel()
			start := time.Now()
			s, err := store.Open(ctx, store.Config{Path: c.url, Role: store.RoleControl})
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("opened a database on a server that never answers")
			}
			if took < c.least || took > c.most {
				t.Fatalf("open failed after %v, want %v to %v: %v", took.Round(time.Millisecond), c.least, c.most, err)
			}
		})
	}
}
