// Command controld is Bindery's control plane: the admin HTTP API, policy,
// admission, scheduling and stale-lease recovery.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/cli"
)

func main() {
	root := &cobra.Command{
		Use:           "controld",
		Short:         "Bindery control plane: admin API, policy and scheduling",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newMigrateCommand(), newVersionCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "controld:", err)
		os.Exit(cli.CodeOf(err))
	}
}
