package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"

	"github.com/bindery-nas/bindery/internal/pgtest"
)

// apiPostgresRows: the API rows on PostgreSQL (issue 22: p99 < 20 ms at
// 200 req/s on a 1M-file database, as on SQLite). The index is generated
// as for the SQLite rows and moved with `controld migrate --from`, the
// path a user takes, into a private PostgreSQL server.
func apiPostgresRows(ctx context.Context, r *runner) []Row {
	const work, target = "API pages over HTTP on PostgreSQL", "p99 < 20 ms"
	files, jobs := 5_000, 500
	dur := r.apiDuration()
	if !r.small() {
		files, jobs = 1_000_000, 100_000
	}
	label := fmt.Sprintf("%s files, %s groups, %s jobs", count(files), count(files/5), count(jobs))
	bin, err := r.bins.build(ctx, "./cmd/controld")
	if err != nil {
		return []Row{notRun(work, label, target, err)}
	}
	srv, err := pgtest.Start()
	if err != nil {
		return []Row{notRun(work, label, target, err)}
	}
	defer srv.Close()
	place := func(ctx context.Context, sqlitePath string) (string, error) {
		if err := srv.Exec(ctx, "postgres", "CREATE DATABASE bindery"); err != nil {
			return "", err
		}
		url := srv.URL("bindery", pgtest.Superuser)
		r.logf("api: moving the index into PostgreSQL (controld migrate --from)")
		out, err := exec.CommandContext(ctx, bin, "migrate", "--from", "sqlite://"+sqlitePath, "--db", url).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("controld migrate --from: %v: %s", err, bytes.TrimSpace(out))
		}
		return url, nil
	}
	rows, _, err := r.apiLoad(ctx, bin, files, jobs, dur, place)
	if err != nil {
		return []Row{notRun(work, label, target, err)}
	}
	for i := range rows {
		rows[i].Workload += " (PostgreSQL)"
		rows[i].Size = label
	}
	return rows
}
