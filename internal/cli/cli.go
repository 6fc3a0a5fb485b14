// Package cli holds what both daemons' command lines share: flag defaults
// taken from the environment, exit codes, and the error type that carries
// one.
package cli

import (
	"errors"
	"os"
	"strconv"
	"time"
)

// Exit codes shared by controld and workerd.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitDatabase = 2 // the database file is missing, corrupt or unreadable
	ExitSchema   = 3 // the schema is older or newer than this binary
	ExitUsage    = 64
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

// EnvInt is Env for integers; an unparsable value yields def.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// EnvDuration is Env for durations ("30s"); an unparsable value yields def.
func EnvDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
