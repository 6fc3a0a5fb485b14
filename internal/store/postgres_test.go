package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
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
	if err := s.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	after := s.Now()
	if server.Before(before.Add(-slack)) || server.After(after.Add(slack)) {
		t.Fatalf("server clock %v, store clock %v to %v around that read", server, before, after)
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

// TestCopyToPostgres moves an SQLite database of 100,000 files (50,000
// duplicate pairs, covers, jobs, changed settings) into PostgreSQL: every
// row arrives with its id, the duplicate groups are the same, new rows get
// fresh ids, and a second copy into the now used database is refused.
func TestCopyToPostgres(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	from := filepath.Join(t.TempDir(), "bindery.db")
	if err := store.Migrate(ctx, from); err != nil {
		t.Fatal(err)
	}
	src := storetest.MustOpen(t, from, store.RoleControl, nil)
	now := protocol.FormatTime(src.Now())
	lib, err := src.CreateLibrary(ctx, store.NewLibrary{Name: "comics", Path: "/libraries/comics"})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
		INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, hash_algorithm, content_hash,
			needs_hash, created_at, updated_at)
		SELECT ?1, printf('series %d/book %d.cbz', i % 997, i), 1000 + i % 50000, i, 'blake3',
			CAST(printf('%032d', i % 50000) AS BLOB), 0, ?2, ?2 FROM n`,
		`INSERT INTO thumbnails (file_id, library_id, group_key, status, output_relpath, created_at, updated_at)
		SELECT id, library_id, 'library:' || library_id, 'ready', 'covers/' || id || '.webp', ?2, ?2
		FROM library_files WHERE id % 10 = 0 AND ?1 = ?1`,
		`INSERT INTO jobs (kind, status, library_id, worker_id, lease_expires_at, created_at, updated_at)
		VALUES ('scan', 'running', ?1, 'gone', ?2, ?2, ?2)`,
		`INSERT INTO settings (key, value, updated_at) VALUES ('scan.cover.width', '512', ?2) ON CONFLICT (key) DO UPDATE SET value = '512' WHERE ?1 = ?1`,
	} {
		if _, err := src.Exec(ctx, q, lib.ID, now); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	to := storetest.MustMigrate(t)
	var copied []string
	if err := store.CopyToPostgres(ctx, from, to, func(table string, n int64) {
		copied = append(copied, fmt.Sprintf("%s=%d", table, n))
	}); err != nil {
		t.Fatal(err)
	}
	dst := storetest.MustOpen(t, to, store.RoleControl, nil)
	for _, q := range []string{
		`SELECT count(*) FROM library_files`, `SELECT sum(id) FROM library_files`, `SELECT count(*) FROM thumbnails`,
		`SELECT count(*) FROM jobs WHERE status = 'running'`, `SELECT count(*) FROM duplicate_groups`,
		`SELECT count(*) FROM settings WHERE key = 'scan.cover.width' AND value = '512'`,
	} {
		want, err := src.QueryInt(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := dst.QueryInt(ctx, q); err != nil || got != want {
			t.Errorf("%s: %d on PostgreSQL (%v), %d on SQLite", q, got, err, want)
		}
	}
	srcGroups, err := src.DuplicateGroups(ctx, nil, 20)
	if err != nil {
		t.Fatal(err)
	}
	dstGroups, err := dst.DuplicateGroups(ctx, nil, 20)
	if err != nil || !reflect.DeepEqual(srcGroups, dstGroups) || len(dstGroups) != 20 {
		t.Fatalf("duplicate groups: %v\nPostgreSQL %+v\nSQLite %+v", err, dstGroups, srcGroups)
	}
	next, err := dst.CreateLibrary(ctx, store.NewLibrary{Name: "manga", Path: "/libraries/manga"})
	if err != nil || next.ID <= lib.ID {
		t.Fatalf("a library after the copy: %+v, %v", next, err)
	}
	if err := store.CopyToPostgres(ctx, from, to, nil); !errors.Is(err, store.ErrTargetNotEmpty) {
		t.Fatalf("a second copy: %v", err)
	}
	t.Logf("copied %s", strings.Join(copied, " "))
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
	if err := control.QueryRow(context.Background(), `SHOW idle_in_transaction_session_timeout`).Scan(&v); err != nil {
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
