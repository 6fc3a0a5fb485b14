package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestApplyEnv: a variable fills a flag the command line left alone, the
// command line wins, and a value that does not parse is a usage error that
// names the variable.
func TestApplyEnv(t *testing.T) {
	setup := func(t *testing.T, args ...string) (*pflag.FlagSet, *time.Duration, *int) {
		t.Helper()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		d := fs.Duration("lease", 30*time.Second, "")
		n := fs.Int("workers", 2, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return fs, d, n
	}
	vars := map[string]string{"lease": "T_LEASE", "workers": "T_WORKERS"}

	t.Run("defaults without variables", func(t *testing.T) {
		fs, d, n := setup(t)
		if err := ApplyEnv(fs, vars); err != nil || *d != 30*time.Second || *n != 2 {
			t.Fatalf("%v %v %d", err, *d, *n)
		}
	})
	t.Run("variables fill unset flags", func(t *testing.T) {
		t.Setenv("T_LEASE", "45s")
		t.Setenv("T_WORKERS", "4")
		fs, d, n := setup(t)
		if err := ApplyEnv(fs, vars); err != nil || *d != 45*time.Second || *n != 4 {
			t.Fatalf("%v %v %d", err, *d, *n)
		}
	})
	t.Run("the command line wins", func(t *testing.T) {
		t.Setenv("T_LEASE", "not a duration")
		fs, d, _ := setup(t, "--lease", "5s")
		if err := ApplyEnv(fs, vars); err != nil || *d != 5*time.Second {
			t.Fatalf("%v %v", err, *d)
		}
	})
	t.Run("a bad value names its variable", func(t *testing.T) {
		for env, v := range map[string]string{"T_LEASE": "30", "T_WORKERS": "two"} {
			t.Run(env, func(t *testing.T) {
				t.Setenv(env, v)
				fs, _, _ := setup(t)
				err := ApplyEnv(fs, vars)
				if CodeOf(err) != ExitUsage || !strings.Contains(err.Error(), env+"=") {
					t.Fatalf("err %v (exit %d)", err, CodeOf(err))
				}
			})
		}
	})
}
