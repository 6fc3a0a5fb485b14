package leases_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// seedThumbnails inserts n pending thumbnails in one transaction, as
// controld's admission would.
func seedThumbnails(b *testing.B, path string, n int) {
	b.Helper()
	db, err := store.OpenRaw(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (?, 1, 'g', 'x.webp', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := st.Exec(i + 1); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if storetest.Postgres() { // what autovacuum does within a minute of a bulk insert
		if _, err := db.Exec(`ANALYZE thumbnails`); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimFinishThumbnail measures claim→finish cycles per second of
// the real lease paths (probe, stale recovery, claim, owner-checked
// finish, whitelist authorizer or grants) with 1 and 4 workers (and 16 on
// PostgreSQL, where workers sit on many hosts), each worker its own Store
// (own connections), as separate workerd processes would be.
func BenchmarkClaimFinishThumbnail(b *testing.B) {
	for _, workers := range benchWorkers() {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			path := storetest.MustMigrate(b)
			seedThumbnails(b, path, b.N)
			stores := make([]*store.Store, workers)
			ls := make([]*leases.Leases, workers)
			for i := range stores {
				stores[i] = storetest.MustOpen(b, path, store.RoleWorker, nil)
				ls[i] = leases.New(stores[i])
			}
			ctx := context.Background()
			elapsed := runCycles(b, workers, func(i int) (bool, error) {
				st, id := ls[i], fmt.Sprintf("w%d", i)
				t, err := st.ClaimThumbnail(ctx, id, 30*time.Second)
				if err != nil || t == nil {
					return false, err
				}
				return true, st.FinishThumbnail(ctx, t.Fence(), leases.ThumbnailDone{Width: 1, Height: 1, BytesSize: 1})
			})
			if n, _ := storetest.QueryInt(ctx, stores[0], `SELECT count(*) FROM thumbnails WHERE status = 'ready'`); n != int64(b.N) {
				b.Fatalf("ready = %d, want %d", n, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "cycles/s")
		})
	}
}

// BenchmarkPlainSQLiteTwoTx is the baseline: the same claim and finish as
// two bare transactions on one go-sqlite3 connection, without recovery,
// probe, authorizer or owner check.
func BenchmarkPlainSQLiteTwoTx(b *testing.B) {
	path := storetest.MustMigrate(b)
	seedThumbnails(b, path, b.N)
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		var id int64
		if err := tx.QueryRow(`UPDATE thumbnails SET status = 'running', worker_id = 'w', lease_expires_at = '2099-01-01 00:00:00.000'
			WHERE id = (SELECT id FROM thumbnails WHERE status = 'pending' ORDER BY created_at, id LIMIT 1) RETURNING id`).Scan(&id); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		tx, err = db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`UPDATE thumbnails SET status = 'ready', lease_expires_at = NULL WHERE id = ? AND worker_id = 'w'`, id); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
}

// benchWorkers are the worker counts of the claim benchmarks.
func benchWorkers() []int {
	if storetest.Postgres() {
		return []int{1, 4, 16}
	}
	return []int{1, 4}
}

// BenchmarkPlainPostgresTwoTx is PostgreSQL's baseline, pgbench-style: the
// same claim (FOR UPDATE SKIP LOCKED) and finish as two bare statements
// over pgx, with as many connections as the claim benchmark has workers,
// and no probe, recovery, lease times or owner check.
func BenchmarkPlainPostgresTwoTx(b *testing.B) {
	if !storetest.Postgres() {
		b.Skip("PostgreSQL only: run with " + storetest.EngineVar + "=postgres")
	}
	for _, workers := range benchWorkers() {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			path := storetest.MustMigrate(b)
			seedThumbnails(b, path, b.N)
			ctx := context.Background()
			conns := make([]*pgx.Conn, workers)
			for i := range conns {
				c, err := pgx.Connect(ctx, path)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close(ctx)
				conns[i] = c
			}
			elapsed := runCycles(b, workers, func(i int) (bool, error) {
				c, w := conns[i], fmt.Sprintf("w%d", i)
				var id int64
				err := c.QueryRow(ctx, `UPDATE thumbnails SET status = 'running', worker_id = $1
					WHERE id = (SELECT id FROM thumbnails WHERE status = 'pending' ORDER BY created_at, id
					LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id`, w).Scan(&id)
				if errors.Is(err, pgx.ErrNoRows) {
					return false, nil
				}
				if err == nil {
					_, err = c.Exec(ctx, `UPDATE thumbnails SET status = 'ready' WHERE id = $1 AND worker_id = $2`, id, w)
				}
				return err == nil, err
			})
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "cycles/s")
		})
	}
}

// runCycles runs cycle(i) in a loop on each of n goroutines until it
// reports no more work, timing from the first cycle to the last, and fails
// b on the first error.
func runCycles(b *testing.B, n int, cycle func(i int) (more bool, err error)) time.Duration {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				more, err := cycle(i)
				if err != nil {
					errs <- err
				}
				if !more || err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return elapsed
}
