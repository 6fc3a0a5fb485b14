package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// errUnhealthy is the healthcheck's verdict; it exits 1.
var errUnhealthy = errors.New("unhealthy")

func newHealthcheckCommand() *cobra.Command {
	var dbPath, workerID string
	var lease time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when this worker (or, without --worker-id, any worker) refreshed its row recently",
		Long: `Check the workers table. A running workerd refreshes its row every lease/3;
the check fails (exit 1) when the row of --worker-id, or without an id the
most recently seen worker, was not refreshed within 3 leases or was marked
stopped. Exit 2 when the database cannot be read. Meant for docker HEALTHCHECK
and monitoring; set BINDERY_WORKER_ID for both "run" and "healthcheck".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.ApplyEnv(cmd.Flags(), map[string]string{"lease": "BINDERY_LEASE"}); err != nil {
				return err
			}
			st, err := openWorkerStore(cmd.Context(), dbPath)
			if err != nil {
				return err
			}
			defer st.Close()
			ws, err := st.ListWorkers(cmd.Context())
			if err != nil {
				return cli.Exit(cli.ExitDatabase, err)
			}
			msg, err := judge(ws, workerID, st.Now(), 3*lease)
			if err != nil {
				return cli.Exit(cli.ExitFailure, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dbPath, "db", cli.Env("BINDERY_DB", cli.DefaultDB), "SQLite database file or postgres:// URL (env BINDERY_DB)")
	f.StringVar(&workerID, "worker-id", cli.Env("BINDERY_WORKER_ID", ""), "worker to check; empty = any worker (env BINDERY_WORKER_ID)")
	f.DurationVar(&lease, "lease", protocol.DefaultLeaseDuration, "the workers' lease (env BINDERY_LEASE)")
	return cmd
}

// judge picks the worker row to check and decides whether it is fresh.
func judge(ws []store.Worker, workerID string, now time.Time, maxAge time.Duration) (string, error) {
	var w *store.Worker
	for i := range ws {
		if (workerID == "" && !ws[i].StoppedAt.Valid) || ws[i].WorkerID == workerID {
			w = &ws[i]
			break
		}
	}
	if w == nil {
		if workerID == "" {
			return "", fmt.Errorf("%w: no running worker registered", errUnhealthy)
		}
		return "", fmt.Errorf("%w: worker %s is not registered", errUnhealthy, workerID)
	}
	if w.StoppedAt.Valid {
		return "", fmt.Errorf("%w: worker %s stopped at %s", errUnhealthy, w.WorkerID, w.StoppedAt)
	}
	if age := now.Sub(w.LastSeenAt.Time); age > maxAge {
		return "", fmt.Errorf("%w: worker %s last seen %s ago (limit %s)", errUnhealthy, w.WorkerID, age.Round(time.Millisecond), maxAge)
	}
	return fmt.Sprintf("ok: worker %s last seen %s", w.WorkerID, w.LastSeenAt), nil
}
