package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/protocol"
)

// errUnhealthy is the healthcheck's verdict; it exits 1.
var errUnhealthy = errors.New("unhealthy")

func newHealthcheckCommand() *cobra.Command {
	var dbPath, workerID string
	var lease time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when this worker (without --worker-id, this host's) refreshed its row recently",
		Long: `Check the workers table. A running workerd refreshes its row every lease/3;
the check fails (exit 1) when the row of --worker-id was not refreshed within
3 leases or was marked stopped. Exit 2 when the database cannot be read.
Without --worker-id the check is of this host's most recently seen worker
(a workerd without BINDERY_WORKER_ID takes an id that begins with the host
name: one per container of a scaled compose service), or, when no worker
id begins with it, of the most recently seen running worker. Meant for
docker HEALTHCHECK and monitoring.`,
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
			ws, err := leases.New(st).ListWorkers(cmd.Context())
			if err != nil {
				return cli.Exit(cli.ExitDatabase, err)
			}
			host, _ := os.Hostname()
			msg, err := judge(ws, workerID, host, st.Now(), 3*lease)
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

// judge picks the worker row to check (pick) and decides whether it is
// fresh.
func judge(ws []leases.Worker, workerID, host string, now time.Time, maxAge time.Duration) (string, error) {
	w := pick(ws, workerID, host)
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

// pick is the row of workerID; without one, the first running row (ws is
// ordered most recently seen first) among those of this host (ids that
// defaultWorkerID made here), else its latest stopped one, else the first
// running row of any host.
func pick(ws []leases.Worker, workerID, host string) *leases.Worker {
	var mine, running *leases.Worker
	for i := range ws {
		w := &ws[i]
		switch {
		case workerID != "":
			if w.WorkerID == workerID {
				return w
			}
		case host != "" && strings.HasPrefix(w.WorkerID, host+"-"):
			if !w.StoppedAt.Valid {
				return w
			}
			if mine == nil {
				mine = w
			}
		case running == nil && !w.StoppedAt.Valid:
			running = w
		}
	}
	if mine != nil {
		return mine
	}
	return running
}
