package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newServeCommand is filled in by the admin API work (issue 4).
func newServeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Migrate the database and serve the admin API",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("serve: not built yet")
		},
	}
}
