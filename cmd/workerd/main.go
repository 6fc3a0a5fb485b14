// Command workerd is Bindery's data plane: it claims job rows under leases
// and executes scans, hashes, covers, cleanups and WAL checkpoints.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/version"
	"github.com/bindery-nas/bindery/migrations"
)

func main() {
	m := &Main{Stdout: os.Stdout, Stderr: os.Stderr}
	os.Exit(m.Run(context.Background(), os.Args[1:]))
}

// Main is workerd's entry point without os.Exit, so that tests can run the
// command line in-process. Stdout and Stderr default to the process's.
type Main struct {
	Stdout, Stderr io.Writer
}

// Run executes the command line args and returns the process exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	if m.Stdout == nil {
		m.Stdout = os.Stdout
	}
	if m.Stderr == nil {
		m.Stderr = os.Stderr
	}
	root := &cobra.Command{
		Use:   "workerd",
		Short: "Bindery data plane: claims and executes jobs",
		Long: `workerd claims rows of the jobs, thumbnails, thumbnail_cleanup_jobs and
wal_maintenance_jobs tables under leases and executes them. It shares only
the database with controld: an SQLite file, where several workerd processes
on one host may run against it, or PostgreSQL, where workerd processes on
several hosts may. workerd never creates or migrates the database: start
controld (or run "controld migrate") first.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	root.SetArgs(args)
	root.AddCommand(m.newRunCommand(), newHealthcheckCommand(), &cobra.Command{
		Use:   "version",
		Short: "Print the version and the schema version this binary knows",
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "workerd %s (schema %d)\n", version.Version, migrations.Latest())
		},
	})
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(m.Stderr, "workerd:", err)
		return cli.CodeOf(err)
	}
	return cli.ExitOK
}
