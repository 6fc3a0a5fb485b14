// Package cli holds what both daemons' command lines share: flag defaults
// taken from the environment, exit codes, and the error type that carries
// one.
package cli

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/pflag"
)

// Exit codes shared by controld and workerd.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitDatabase = 2 // the database file is missing, corrupt or unreadable
	ExitSchema   = 3 // the schema is older or newer than this binary
	ExitUsage    = 64
	// ExitStuck: workerd ended itself because a cancelled cover render had
	// not returned two leases later (engine.Config.OnStuck); its supervisor
	// restarts it.
	ExitStuck = 70
)

// Defaults of the settings both daemons share, as the container image lays
// them out; the systemd install overrides them in its environment file.
const (
	DefaultStateDir    = "/state"
	DefaultDB          = DefaultStateDir + "/bindery.db"
	DefaultLibraryRoot = "/libraries"
)

// ExitError makes a command exit with Code after printing Err.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Exit wraps err with an exit code; nil stays nil.
func Exit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// CodeOf is the process exit code for err.
func CodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// Env returns the environment variable name, or def when it is unset.
func Env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// ApplyEnv gives each flag of fs that the command line did not set the
// value of its environment variable (vars maps flag name → variable),
// parsed as the flag parses its own value. A value that does not parse is
// an error naming the variable: BINDERY_LEASE=30 is refused, not read as
// the default. Run it after fs.Parse.
func ApplyEnv(fs *pflag.FlagSet, vars map[string]string) error {
	names := make([]string, 0, len(vars))
	for flag := range vars {
		names = append(names, flag)
	}
	sort.Strings(names)
	for _, flag := range names {
		env := vars[flag]
		v, ok := os.LookupEnv(env)
		if !ok || v == "" || fs.Changed(flag) {
			continue
		}
		if err := fs.Set(flag, v); err != nil {
			return Exit(ExitUsage, fmt.Errorf("%s=%q: %w", env, v, err))
		}
	}
	return nil
}
