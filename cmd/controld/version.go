package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/version"
	"github.com/bindery-nas/bindery/migrations"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the schema version this binary knows",
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "controld %s (schema %d)\n", version.Version, migrations.Latest())
		},
	}
}
