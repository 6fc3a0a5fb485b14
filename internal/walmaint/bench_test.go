package walmaint_test

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/walmaint"
	"github.com/bindery-nas/bindery/protocol"
)

// BenchmarkTruncateWriterStall measures how long a truncate checkpoint of a
// large WAL blocks a concurrent writer. BINDERY_BENCH_WAL_MB sets the WAL
// size (default 64; the figure is 500). Reported per run:
// ckpt-ms (the checkpoint's duration) and stall-ms (the longest single
// INSERT of a writer committing in a loop meanwhile).
//
//	direct:        one TRUNCATE pass (SQLite holds the writer lock while it
//	               copies the whole WAL)
//	passive-first: the executor's default, a PASSIVE pass then TRUNCATE
func BenchmarkTruncateWriterStall(b *testing.B) {
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("BINDERY_BENCH_WAL_MB")); err == nil && v > 0 {
		mb = v
	}
	for _, c := range []struct {
		name string
		cfg  walmaint.Config
	}{
		{"direct", walmaint.Config{NoPassiveFirst: true}},
		{"passive-first", walmaint.Config{}},
	} {
		b.Run(c.name+"/"+strconv.Itoa(mb)+"MB", func(b *testing.B) {
			path := storetest.MustMigrate(b)
			st := storetest.MustOpen(b, path, store.RoleWorker, nil)
			filler := rawConn(b, path)
			writer := rawConn(b, path)
			if _, err := filler.Exec(`CREATE TABLE IF NOT EXISTS filler (b BLOB)`); err != nil {
				b.Fatal(err)
			}
			ex := walmaint.New(st, c.cfg)
			var ckptTotal, stallMax time.Duration
			for b.Loop() {
				b.StopTimer()
				growWAL(b, filler, mb)
				b.StartTimer()
				ckpt, stall := checkpointUnderWrites(b, ex, writer)
				ckptTotal += ckpt
				stallMax = max(stallMax, stall)
			}
			b.Logf("%s %dMB: checkpoint %v per run, longest writer stall %v", c.name, mb, ckptTotal/time.Duration(b.N), stallMax)
			b.ReportMetric(float64(ckptTotal.Milliseconds())/float64(b.N), "ckpt-ms")
			b.ReportMetric(float64(stallMax.Milliseconds()), "stall-ms")
		})
	}
}

// rawConn is a third-party connection that never checkpoints on its own,
// so only the executor moves the WAL.
func rawConn(b *testing.B, path string) *sql.DB {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=60000&_journal_mode=WAL")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
		b.Fatal(err)
	}
	return db
}

func growWAL(b *testing.B, db *sql.DB, mb int) {
	for i := 0; i < mb; i += 4 {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for range 64 {
			if _, err := tx.Exec(`INSERT INTO filler VALUES (randomblob(65536))`); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Exec(`DELETE FROM filler`); err != nil { // keep the database itself small
		b.Fatal(err)
	}
}

func checkpointUnderWrites(b *testing.B, ex *walmaint.Executor, writer *sql.DB) (ckpt, stall time.Duration) {
	stop := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		first := true
		for {
			t0 := time.Now()
			if _, err := writer.Exec(`INSERT INTO filler VALUES (x'00')`); err != nil {
				b.Error(err)
				return
			}
			stall = max(stall, time.Since(t0))
			if first {
				close(started)
				first = false
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	<-started
	t0 := time.Now()
	res, err := ex.Checkpoint(context.Background(), model.WALJob{ID: 1, RequestedMode: protocol.CheckpointTruncate})
	ckpt = time.Since(t0)
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	if res.Busy != 0 {
		b.Logf("checkpoint busy: %+v", res)
	}
	return ckpt, stall
}
