package daemons

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver the generator writes with

	"github.com/bindery-nas/bindery/internal/api"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/protocol"
)

// apiDB is a generated controld database: Files library_files rows of
// which a fifth are duplicate groups of three (the rest single files), and
// Jobs finished jobs rows, three per second of created_at ending a minute
// before generation (inside the default 24 h retention, so the scheduler
// leaves them alone during the run).
type apiDB struct {
	Path        string
	Files, Jobs int
	jobsBase    time.Time
}

func (d *apiDB) groups() int { return d.Files / 5 }

// generateAPIDB migrates path with `controld migrate` of the binary
// under test (so the schema is the one it serves, and the summary triggers
// maintain duplicate_groups as the rows go in) and fills it with SQL. The
// data are a pure function of the sizes and the clock.
func generateAPIDB(ctx context.Context, controld, path, libPath string, files, jobs int) (*apiDB, error) {
	if out, err := exec.CommandContext(ctx, controld, "migrate", "--db", path).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("api db: controld migrate: %v: %s", err, bytes.TrimSpace(out))
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL&_synchronous=OFF")
	if err != nil {
		return nil, fmt.Errorf("api db: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	d := &apiDB{Path: path, Files: files, Jobs: jobs}
	now := time.Now().UTC().Truncate(time.Second)
	d.jobsBase = now.Add(-time.Minute - time.Duration(jobs/3+1)*time.Second)
	stamp := protocol.FormatTime(now)
	grouped := 3 * d.groups()
	stmts := []string{
		fmt.Sprintf(`INSERT INTO libraries (id, name, path, created_at, updated_at) VALUES (1, 'bench', '%s', '%s', '%s')`,
			libPath, stamp, stamp),
		// Groups of three share a content hash; their sizes repeat every
		// 5,000 groups so that many groups tie on (count, total size).
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[1]d)
			INSERT INTO library_files (id, library_id, relative_path, size_bytes, mtime_ns, format, needs_analysis,
				needs_hash, hash_algorithm, content_hash, created_at, updated_at)
			SELECT i, 1, printf('series %%04d/book %%07d.cbz', i / 100, i),
				CASE WHEN i <= %[2]d THEN ((i - 1) / 3 %% 5000) * 1000 ELSE i END, i, 'zip', 0, 0, 'blake3',
				CAST(printf('%%032d', CASE WHEN i <= %[2]d THEN (i - 1) / 3 ELSE i END) AS BLOB), '%[3]s', '%[3]s'
			FROM n`, files, grouped, stamp),
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[1]d)
			INSERT INTO jobs (id, kind, status, library_id, priority, created_at, updated_at, started_at, finished_at, progress)
			SELECT i, CASE i %% 4 WHEN 0 THEN 'scan' WHEN 1 THEN 'hash' WHEN 2 THEN 'thumbnail' ELSE 'delete' END,
				CASE i %% 3 WHEN 0 THEN 'completed' WHEN 1 THEN 'failed' ELSE 'cancelled' END, 1, 'normal',
				strftime('%%Y-%%m-%%d %%H:%%M:%%f', '%[2]s', '+' || (i / 3) || ' seconds'),
				strftime('%%Y-%%m-%%d %%H:%%M:%%f', '%[2]s', '+' || (i / 3) || ' seconds'),
				strftime('%%Y-%%m-%%d %%H:%%M:%%f', '%[2]s', '+' || (i / 3) || ' seconds'),
				strftime('%%Y-%%m-%%d %%H:%%M:%%f', '%[2]s', '+' || (i / 3) || ' seconds'), 1
			FROM n`, jobs, protocol.FormatTime(d.jobsBase)),
	}
	// A live database has followed up its old scans long ago; without these
	// rows the scheduler would spend the measured window catching up.
	var followups int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'job_followups'`).Scan(&followups); err != nil {
		return nil, fmt.Errorf("api db: %w", err)
	}
	if followups == 1 {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO job_followups (job_id, library_id, job_status, hash_requested, created_at)
			SELECT id, library_id, status, 0, '%s' FROM jobs WHERE kind = 'scan'`, stamp))
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("api db: generate: %w", err)
		}
	}
	var got int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM duplicate_groups WHERE file_count > 1`).Scan(&got); err != nil {
		return nil, fmt.Errorf("api db: %w", err)
	}
	if got != d.groups() {
		return nil, fmt.Errorf("api db: %d duplicate groups, want %d", got, d.groups())
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return nil, fmt.Errorf("api db: checkpoint: %w", err)
	}
	return d, nil
}

// jobCursor is the cursor of the page after job id (1 ≤ id ≤ Jobs).
func (d *apiDB) jobCursor(id int) string {
	at := d.jobsBase.Add(time.Duration(id/3) * time.Second)
	return api.EncodeCursor(model.JobAnchor{CreatedAt: protocol.FormatTime(at), ID: int64(id)})
}

// groupCursor is the cursor of the page after duplicate group g.
func (d *apiDB) groupCursor(g int) string {
	return api.EncodeCursor(model.GroupAnchor{FileCount: 3, TotalSizeBytes: int64(g%5000) * 3000,
		HashAlgorithm: "blake3", ContentHashHex: hex.EncodeToString(fmt.Appendf(nil, "%032d", g))})
}

// anchors returns n seeded random cursors, a tenth of them "" (the first
// page): the walk a client resuming anywhere in the list would make.
func anchors(n, seed int, cursor func(r *rand.Rand) string) []string {
	r := rand.New(rand.NewPCG(uint64(seed), 10))
	out := make([]string, n)
	for i := range out {
		if r.IntN(10) != 0 {
			out[i] = cursor(r)
		}
	}
	return out
}
