// Command workerd is Bindery's data plane: it claims job rows under leases
// and executes scans, hashes, covers, cleanups and WAL checkpoints.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/version"
	"github.com/bindery-nas/bindery/migrations"
)

func main() {
	root := &cobra.Command{
		Use:           "workerd",
		Short:         "Bindery data plane: claims and executes jobs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version and the schema version this binary knows",
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "workerd %s (schema %d)\n", version.Version, migrations.Latest())
		},
	})
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "workerd:", err)
		os.Exit(cli.CodeOf(err))
	}
}
