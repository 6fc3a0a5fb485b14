package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/migrations"
)

func newMigrateCommand() *cobra.Command {
	var dbPath string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending schema migrations and exit",
		Long: `Apply every pending schema migration to the database and exit.
Migrating an up-to-date database is a no-op. A database written by a newer
Bindery is refused: controld never downgrades.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := migrate(cmd, dbPath); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "database %s at schema version %d\n", dbPath, migrations.Latest())
			return nil
		},
	}
	cmd.Flags().StringVar(&dbPath, "db", cli.Env("BINDERY_DB", "/state/bindery.db"), "SQLite database file (env BINDERY_DB)")
	return cmd
}

func migrate(cmd *cobra.Command, dbPath string) error {
	err := store.Migrate(cmd.Context(), dbPath)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, migrations.ErrSchemaTooNew):
		return cli.Exit(cli.ExitSchema, err)
	default:
		return cli.Exit(cli.ExitDatabase, err)
	}
}
