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
			return printRepairs(cmd, dbPath)
		},
	}
	cmd.Flags().StringVar(&dbPath, "db", cli.Env("BINDERY_DB", cli.DefaultDB), "SQLite database file (env BINDERY_DB)")
	return cmd
}

// printRepairs lists what the data migrations repaired (legacy rows, times
// in another spelling), so that an operator sees it once, after migrating.
func printRepairs(cmd *cobra.Command, dbPath string) error {
	st, err := store.Open(cmd.Context(), store.Config{Path: dbPath})
	if err != nil {
		return cli.Exit(cli.ExitDatabase, err)
	}
	defer st.Close()
	repairs, err := st.MigrationRepairs(cmd.Context())
	if err != nil {
		return cli.Exit(cli.ExitDatabase, err)
	}
	for _, r := range repairs {
		fmt.Fprintf(cmd.OutOrStdout(), "repaired by migration %d: %s.%s %s, %d rows\n", r.Version, r.Table, r.Column, r.Code, r.Rows)
	}
	return nil
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
