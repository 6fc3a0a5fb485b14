// Package testutil holds the few helpers that tests of several packages
// share: finding the module root, and the shared real-world fixtures that
// live next to the checkout (../shared/fixtures) on machines that have
// them. It is imported by tests and by test harnesses (cmd/chaos), never by
// the daemons.
package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ModuleRoot walks up from the working directory to the folder holding
// go.mod. Tests run in their package's folder, so this finds the checkout
// whichever package asks.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// RepoRoot is ModuleRoot for a test: it fails the test when there is no
// module root.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	root, err := ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

// SharedFixture returns <module root>/../shared/fixtures/<parts...>, or
// skips the test when it is absent: the shared fixtures are never copied
// into the repository, so a checkout without them still passes.
func SharedFixture(tb testing.TB, parts ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{RepoRoot(tb), "..", "shared", "fixtures"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared fixtures %s absent", p)
	}
	return p
}

// SharedArchiveSets are the folders of ../shared/fixtures that hold
// archives (opds holds schemas).
var SharedArchiveSets = []string{"komga", "kavita", "libarchive", "sevenzip", "realworld"}

// CIVar is the environment variable CI services set to "true"; .ci/run
// sets it too.
const CIVar = "CI"

// SkipUnlessCI skips a test that cannot run on this machine for want of
// something the project's CI provides (root, network namespaces, a mount,
// QEMU and busybox, a Docker engine), saying why; under CI=true it fails
// instead. A test that needs the machine cannot go quietly green where the
// machine is promised. Skips for other reasons (-short, absent shared
// fixtures, root reading everything) do not call it.
func SkipUnlessCI(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv(CIVar) == "true" {
		tb.Fatalf("CI=true, so this cannot be skipped: "+format, args...)
		return
	}
	tb.Skipf(format, args...)
}

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test naming what it waited for when limit passes first. Tests wait on a
// condition like this, never on a fixed sleep.
func WaitFor(tb testing.TB, what string, limit time.Duration, cond func() bool) {
	tb.Helper()
	WaitForState(tb, what, limit, func() (bool, string) { return cond(), "" })
}

// WaitForState is WaitFor for a condition that can say where it stands:
// a failure names the last state seen ("3 of 5 ready").
func WaitForState(tb testing.TB, what string, limit time.Duration, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	pause := time.Millisecond
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if state != "" {
				state = " (last: " + state + ")"
			}
			tb.Fatalf("%s: not reached within %v%s", what, limit, state)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// FuzzDeadline bounds one call of a fuzzed decoder: they are linear in
// inputs of at most a few hundred bytes, so anything near it is a bug. It
// is generous because the fuzzer shares a loaded machine (a 100 ms bound
// tripped on scheduling alone).
const FuzzDeadline = 2 * time.Second

// Timed runs fn and fails tb when it took longer than FuzzDeadline.
func Timed(tb testing.TB, what string, fn func()) {
	tb.Helper()
	start := time.Now()
	fn()
	if d := time.Since(start); d > FuzzDeadline {
		tb.Fatalf("%s took %v", what, d)
	}
}
