package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testutil", "testutil.go")); err != nil {
		t.Fatalf("%s is not this module's root: %v", root, err)
	}
}

func TestSharedFixture(t *testing.T) {
	t.Run("absent skips", func(t *testing.T) {
		var skipped bool
		t.Run("inner", func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			SharedFixture(t, "no-such-fixture-set")
			t.Error("SharedFixture returned for an absent set")
		})
		if !skipped {
			t.Fatal("an absent fixture set did not skip")
		}
	})
	t.Run("present", func(t *testing.T) {
		shared := filepath.Join(RepoRoot(t), "..", "shared", "fixtures")
		entries, err := os.ReadDir(shared)
		if err != nil || len(entries) == 0 {
			t.Skip("no shared fixtures on this machine")
		}
		got := SharedFixture(t, entries[0].Name())
		if got != filepath.Join(shared, entries[0].Name()) {
			t.Fatalf("SharedFixture = %s", got)
		}
	})
}

// recordingTB records whether SkipUnlessCI skipped or failed, and how.
type recordingTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestSkipUnlessCI(t *testing.T) {
	for _, ci := range []string{"", "false", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv(CIVar, ci)
			r := &recordingTB{TB: t}
			SkipUnlessCI(r, "needs %s", "root")
			if ci == "true" {
				if r.skipped != "" || !strings.Contains(r.failed, "needs root") {
					t.Fatalf("under CI: skipped %q, failed %q; want a failure naming the need", r.skipped, r.failed)
				}
				return
			}
			if r.failed != "" || r.skipped != "needs root" {
				t.Fatalf("skipped %q, failed %q; want a skip", r.skipped, r.failed)
			}
		})
	}
}
