package hashes_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// BenchmarkRecordHashes stores first digests for 100,000 files in batches
// of 4096, as a hash job does: the database half of hashing small files.
func BenchmarkRecordHashes(b *testing.B) {
	const n, batch = 100_000, 4096
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		path := storetest.MustMigrate(b)
		db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=NORMAL")
		if err != nil {
			b.Fatal(err)
		}
		mustExecRaw(b, db, `INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'l', '/l', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`)
		mustExecRaw(b, db, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < ?)
			INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, created_at, updated_at)
			SELECT 1, 'f' || i, 1000, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000' FROM c`, n)
		mustExecRaw(b, db, `INSERT INTO jobs (kind, status, created_at, updated_at) VALUES ('hash', 'pending', '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`)
		db.Close()
		w := storetest.MustOpen(b, path, store.RoleWorker, nil)
		job, err := leases.New(w).ClaimJob(ctx, "bench", time.Hour)
		if err != nil || job == nil {
			b.Fatalf("claim: %v, %v", job, err)
		}
		results := make([]hashes.HashResult, n)
		for i := range results {
			sum := make([]byte, 32)
			rand.Read(sum)
			results[i] = hashes.HashResult{ID: int64(i + 1), Algorithm: protocol.HashSHA256, Sum: sum, SizeBytes: 1000, MtimeNS: 1}
		}
		b.StartTimer()
		t0 := time.Now()
		for i := 0; i < n; i += batch {
			if _, err := hashes.New(w).RecordHashes(ctx, job.Fence(), results[i:min(i+batch, n)], nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)/time.Since(t0).Seconds(), "rows/s")
	}
}

func mustExecRaw(b *testing.B, db *sql.DB, query string, args ...any) {
	b.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		b.Fatal(err)
	}
}
