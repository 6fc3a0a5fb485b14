package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bindery-nas/bindery/internal/cli"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/pgadmin"
	"github.com/bindery-nas/bindery/migrations"
)

func newMigrateCommand() *cobra.Command {
	var dbPath, workerRole, passwordFile, printGrants, from string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending schema migrations and exit",
		Long: `Apply every pending schema migration to the database and exit.
Migrating an up-to-date database is a no-op. A database written by a newer
Bindery is refused: controld never downgrades.

On PostgreSQL, --worker-role NAME also makes NAME a login role holding
exactly the writes workerd may do (run it as the role controld uses, which
owns the schema), with the password in BINDERY_WORKER_PASSWORD or the file
--worker-password-file (set on every run; without one the role's password
is left as it is); --print-grants NAME prints those statements for a DBA
instead, and touches no database; --from FILE copies an SQLite database,
migrated to this release and with both daemons stopped, into the empty
PostgreSQL database (all or nothing; ids, covers' rows and history kept).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printGrants != "" {
				return printWorkerGrants(cmd, printGrants)
			}
			password, err := workerPassword(workerRole, passwordFile)
			if err != nil {
				return err
			}
			if from != "" {
				if err := copyFrom(cmd, strings.TrimPrefix(from, "sqlite://"), dbPath); err != nil {
					return err
				}
			}
			if err := migrate(cmd, dbPath); err != nil {
				return err
			}
			st, err := store.Open(cmd.Context(), store.Config{Path: dbPath})
			if err != nil {
				return cli.Exit(cli.ExitDatabase, err)
			}
			defer st.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "database %s at schema version %d\n", st.Path(), migrations.Latest())
			if workerRole != "" {
				if err := grantWorker(cmd, dbPath, workerRole, password); err != nil {
					return err
				}
			}
			return printRepairs(cmd, st)
		},
	}
	cmd.Flags().StringVar(&dbPath, "db", cli.Env("BINDERY_DB", cli.DefaultDB), "SQLite database file or postgres:// URL (env BINDERY_DB)")
	cmd.Flags().StringVar(&workerRole, "worker-role", "", "PostgreSQL: create or update this login role with workerd's grants")
	cmd.Flags().StringVar(&passwordFile, "worker-password-file", cli.Env("BINDERY_WORKER_PASSWORD_FILE", ""), "PostgreSQL: the worker role's password, read from this file (env BINDERY_WORKER_PASSWORD_FILE; or the password itself in BINDERY_WORKER_PASSWORD)")
	cmd.Flags().StringVar(&printGrants, "print-grants", "", "PostgreSQL: print the grants of this worker role and exit")
	cmd.Flags().StringVar(&from, "from", "", "PostgreSQL: first copy this SQLite database (a path or sqlite:// URL) into the empty database")
	return cmd
}

func printWorkerGrants(cmd *cobra.Command, role string) error {
	grants, err := migrations.WorkerGrants(role)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "CREATE ROLE %s LOGIN;\n", role)
	for _, g := range grants {
		fmt.Fprintln(cmd.OutOrStdout(), g+";")
	}
	return nil
}

// workerPassword is the worker role's password: the file's first line, or
// BINDERY_WORKER_PASSWORD (never a flag, which ps would show), or empty.
func workerPassword(role, file string) (string, error) {
	env := os.Getenv("BINDERY_WORKER_PASSWORD")
	switch {
	case file == "" && env == "":
		return "", nil
	case role == "":
		return "", cli.Exit(cli.ExitUsage, errors.New("a worker password is given without --worker-role"))
	case file != "" && env != "":
		return "", cli.Exit(cli.ExitUsage, errors.New("both BINDERY_WORKER_PASSWORD and --worker-password-file are set: give one"))
	case file == "":
		return env, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", cli.Exit(cli.ExitUsage, fmt.Errorf("worker password: %w", err))
	}
	password, _, _ := strings.Cut(string(data), "\n")
	if password = strings.TrimSuffix(password, "\r"); password == "" {
		return "", cli.Exit(cli.ExitUsage, fmt.Errorf("worker password: %s: the first line is empty", file))
	}
	return password, nil
}

func grantWorker(cmd *cobra.Command, dbPath, role, password string) error {
	err := pgadmin.GrantWorker(cmd.Context(), dbPath, role, password)
	switch {
	case err == nil:
		fmt.Fprintf(cmd.OutOrStdout(), "worker role %s holds workerd's grants\n", role)
		return nil
	case errors.Is(err, pgadmin.ErrNotPostgres), errors.Is(err, migrations.ErrBadRole):
		return cli.Exit(cli.ExitUsage, err)
	default:
		return cli.Exit(cli.ExitDatabase, err)
	}
}

// printRepairs lists what the data migrations repaired (legacy rows, times
// in another spelling), so that an operator sees it once, after migrating.
func printRepairs(cmd *cobra.Command, st *store.Store) error {
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

func copyFrom(cmd *cobra.Command, from, to string) error {
	err := pgadmin.CopyToPostgres(cmd.Context(), from, to, func(table string, rows int64) {
		fmt.Fprintf(cmd.OutOrStdout(), "copied %s: %d rows\n", table, rows)
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgadmin.ErrTargetNotEmpty), errors.Is(err, pgadmin.ErrNotPostgres):
		return cli.Exit(cli.ExitUsage, err)
	case errors.Is(err, migrations.ErrSchemaTooOld), errors.Is(err, migrations.ErrSchemaTooNew):
		return cli.Exit(cli.ExitSchema, err)
	default:
		return cli.Exit(cli.ExitDatabase, err)
	}
}
