package daemons

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"

	"github.com/bindery-nas/bindery/internal/bench/internal/benchx"
	"github.com/bindery-nas/bindery/internal/pgtest"
)

// APIPostgresRows: the API rows on PostgreSQL (issue 22: p99 < 20 ms at
// 200 req/s on a 1M-file database, as on SQLite). The index is generated
// as for the SQLite rows and moved with `controld migrate --from`, the
// path a user takes, into a private PostgreSQL server.
func APIPostgresRows(ctx context.Context, r *benchx.Runner) []benchx.Row {
	const work, target = "API pages over HTTP on PostgreSQL", "p99 < 20 ms"
	files, jobs := 5_000, 500
	dur := apiDuration(r)
	if !r.Small() {
		files, jobs = 1_000_000, 100_000
	}
	label := fmt.Sprintf("%s files, %s groups, %s jobs", benchx.Count(files), benchx.Count(files/5), benchx.Count(jobs))
	bin, err := r.Bins.Build(ctx, "./cmd/controld")
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, label, target, err)}
	}
	srv, err := pgtest.Start()
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, label, target, err)}
	}
	defer srv.Close()
	place := func(ctx context.Context, sqlitePath string) (string, error) {
		if err := srv.Exec(ctx, "postgres", "CREATE DATABASE bindery"); err != nil {
			return "", err
		}
		url := srv.URL("bindery", pgtest.Superuser)
		r.Logf("api: moving the index into PostgreSQL (controld migrate --from)")
		out, err := exec.CommandContext(ctx, bin, "migrate", "--from", "sqlite://"+sqlitePath, "--db", url).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("controld migrate --from: %v: %s", err, bytes.TrimSpace(out))
		}
		return url, nil
	}
	rows, _, err := apiLoad(ctx, r, bin, files, jobs, dur, place)
	if err != nil {
		return []benchx.Row{benchx.NotRunRow(work, label, target, err)}
	}
	for i := range rows {
		rows[i].Workload += " (PostgreSQL)"
		rows[i].Size = label
	}
	return rows
}
